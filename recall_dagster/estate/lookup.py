"""Names the graph answers to beyond the model closures: a catalogued table no model reads is still a table.

Commands first look a name up among the closures (where every twin of a table
is one table); a name none of them holds is looked for in the whole catalog,
so that "no model reads it" is an answer and "not in the graph" is kept for
what really is not there.
"""

from __future__ import annotations

from datahub.metadata.schema_classes import (
    DatasetLineageTypeClass,
    SchemaMetadataClass,
    SiblingsClass,
    UpstreamLineageClass,
)

from recall_dagster.estate.names import MLFLOW_DATASET, named_by
from recall_dagster.graph.port import MetadataGraph

DATASET_URN = "urn:li:dataset:"


def catalogued(graph: MetadataGraph, target: str) -> tuple[str, ...]:
    """Every dataset URN in the graph ``target`` names: the URN itself, its full name, or a trailing part."""
    if target.startswith(DATASET_URN):
        return (target,) if graph.get_aspects([target]).get(target) else ()
    return tuple(u for u in graph.list_urns("dataset") if named_by(u, target))


def one_table(graph: MetadataGraph, urns: tuple[str, ...]) -> tuple[str, ...]:
    """``urns`` with the twins of one table folded into the table: DataHub's dbt source writes a model twice,
    the dbt node a COPY of its warehouse table (on a GMS, also ``siblings``); the warehouse table stands for
    both, whether or not it is among ``urns``. What stays is one URN per distinct table."""
    source: dict[str, str] = {}
    pending, read_already = list(urns), set()
    while pending:  # a twin's own source is read in turn: chains are short, usually one hop
        read = graph.get_aspects(pending, [UpstreamLineageClass, SiblingsClass])
        read_already.update(pending)
        for urn in pending:
            lineage = read.get(urn, {}).get(UpstreamLineageClass.ASPECT_NAME)
            copies = [u.dataset for u in (lineage.upstreams if lineage else ())  # type: ignore[attr-defined]
                      if u.type == DatasetLineageTypeClass.COPY]
            siblings = read.get(urn, {}).get(SiblingsClass.ASPECT_NAME)
            if len(copies) == 1:
                source[urn] = copies[0]
            elif siblings is not None and not siblings.primary and siblings.siblings:  # type: ignore[attr-defined]
                source[urn] = siblings.siblings[0]  # type: ignore[attr-defined]
        pending = sorted({source[u] for u in pending if u in source} - read_already)

    def root(urn: str) -> str:
        seen = {urn}
        while urn in source and source[urn] not in seen:
            urn = source[urn]
            seen.add(urn)
        return urn

    return tuple(dict.fromkeys(root(u) for u in urns))


def recorded_columns(graph: MetadataGraph, urns: tuple[str, ...]) -> tuple[str, ...]:
    """The columns any of ``urns`` records in its schema, in order, once each."""
    read = graph.get_aspects(list(urns), [SchemaMetadataClass])
    found: dict[str, None] = {}
    for urn in urns:
        schema = read.get(urn, {}).get(SchemaMetadataClass.ASPECT_NAME)
        for field in schema.fields if schema else ():  # type: ignore[attr-defined]
            found.setdefault(field.fieldPath.rsplit(".", 1)[-1], None)
    return tuple(found)




def named_inputs(graph: MetadataGraph, references: dict[str, str]) -> dict[str, str]:
    """The catalogued table each MLflow dataset reference names, where exactly one table answers to its name.

    ``mlflow.log_input`` with MLflow's own dataset sources gives DataHub's mlflow
    source a name and a source type; only a type the source maps to a platform
    gets a lineage edge, so a pandas frame read from a warehouse table arrives
    as a dangling ``mlflow`` dataset. Its name is how the team named the table:
    the table the team's other sources catalogued under that name (its dbt node
    and warehouse twin folded into one) is what the run read. ``references``
    maps each such URN to its name; one that names no table, or several, is left
    out, and coverage says so.
    """
    if not references:
        return {}
    catalog = [u for u in graph.list_urns("dataset") if not u.startswith(MLFLOW_DATASET)]
    found = {}
    for urn, name in sorted(references.items()):
        tables = one_table(graph, tuple(u for u in catalog if named_by(u, name)))
        if len(tables) == 1:
            found[urn] = tables[0]
    return found
