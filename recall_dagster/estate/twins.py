"""Which other description of its table a dataset stands for: the one rule that makes twins one table.

DataHub's sources describe one physical table several times and link the descriptions with lineage: the dbt
source makes a model's warehouse table a COPY of its dbt node, and a source's dbt node a COPY of its warehouse
table; the mlflow source's reference to a table is a COPY of it. The dbt source adds its edge to a warehouse
table as a PATCH, so whatever the warehouse source records of the table stays beside it (a view's own lineage
to what it selects from, a table's lineage from query logs). On a GMS, DataHub's sibling hook also marks the
dbt node and the warehouse table siblings, one of them primary.

Closures follow this rule to each table's one name (:meth:`~recall_dagster.estate.closure.ModelClosure.canonical`),
which every count, path and column walk uses; the commands that take a table's name follow it through the
whole catalog (:func:`~recall_dagster.estate.lookup.one_table`).
"""

from __future__ import annotations

from typing import Callable

from datahub.metadata.schema_classes import DatasetLineageTypeClass, SiblingsClass, UpstreamLineageClass


def twin_of(lineage: UpstreamLineageClass | None, siblings: SiblingsClass | None) -> str | None:
    """The description of the same table this one stands for: its one COPY upstream, whatever other lineage
    it records beside it; else, on a GMS, the sibling a secondary sibling has. None for a table's own name."""
    copies = [u.dataset for u in (lineage.upstreams if lineage else ()) if u.type == DatasetLineageTypeClass.COPY]
    if len(copies) == 1:
        return copies[0]
    if siblings is not None and not siblings.primary and len(siblings.siblings) == 1:
        return siblings.siblings[0]
    return None


def table_of(urn: str, twin: Callable[[str], str | None]) -> str:
    """The one name of ``urn``'s table: the end of its chain of twins, ``twin`` answering :func:`twin_of` for
    each description (chains are short, usually one hop). A chain that comes back on itself ends before it
    would repeat."""
    seen = {urn}
    while (step := twin(urn)) is not None and step not in seen:
        seen.add(step)
        urn = step
    return urn
