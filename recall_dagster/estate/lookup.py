"""What table a person's name for a dataset means, for every command: one resolver, here.

A command that takes a dataset (``recall impact``, ``recall blind-window``, the
MCP tools behind them) asks :func:`table_named`. The name is looked up among
the model closures (where every twin of a table is one table) and in the whole
catalog, so that "no model reads it" is an answer and "not in the graph" is
kept for what really is not there. Either way the names a table answers to are
those of :func:`named_by`, and a name two tables answer to is refused with both
listed, whether or not a model reads one of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from datahub.metadata.schema_classes import (
    DatasetPropertiesClass,
    SchemaMetadataClass,
    SiblingsClass,
    UpstreamLineageClass,
)

from recall_dagster.errors import ConfigError
from recall_dagster.estate.columns import ColumnGraph
from recall_dagster.estate.names import MLFLOW_DATASET, display_name, named_by
from recall_dagster.estate.parse import dataset_aliases
from recall_dagster.estate.twins import table_of, twin_of
from recall_dagster.graph.port import MetadataGraph, aspect_of

DATASET_URN = "urn:li:dataset:"


@dataclass(frozen=True)
class NamedTable:
    """The one table a name means."""

    urn: str  # its canonical description: the closures' when a model reads it, else the catalog's (:func:`one_table`)
    described: tuple[str, ...]  # the descriptions the name matched, which record the table's columns
    read: bool  # whether some model's closure holds it


def table_named(graph: MetadataGraph, columns: ColumnGraph, text: str) -> NamedTable | None:
    """The table ``text`` names: a URN of any of its twins, ``platform:name``, its full name, a unique trailing
    part (``marts.fct_orders``), or a dbt node's ``unique_id``; None when nothing in the graph answers to it.
    It is looked for among the closures ``columns`` describes and in the whole catalog alike (a dbt node outside
    every closure is its warehouse twin's table, which a model may read), so a name two tables answer to is a
    :class:`ConfigError` listing them, even when only one of them is read by a model."""
    read = tuple(u for u in columns.canonical if named_by(u, text, columns.aliases.get(u, ())))
    catalog = catalogued(graph, text)
    distinct = {columns.canonical.get(u, u) for u in one_table(graph, tuple(dict.fromkeys((*read, *catalog))))}
    if len(distinct) > 1:
        names = ", ".join(f"{display_name(t)} ({t})" for t in sorted(distinct))
        raise ConfigError(f"{text!r} names several tables: {names}; give the one you mean by its URN")
    if not distinct:
        return None
    if read:
        return NamedTable(columns.canonical[read[0]], read, True)
    table = distinct.pop()
    return NamedTable(table, catalog, table in set(columns.canonical.values()))


def catalogued(graph: MetadataGraph, target: str) -> tuple[str, ...]:
    """Every dataset URN in the graph ``target`` names (:func:`named_by`, a dbt node's ``unique_id`` included)."""
    if target.startswith(DATASET_URN):
        return (target,) if graph.get_aspects([target]).get(target) else ()
    urns = graph.list_urns("dataset")
    props = graph.get_aspects(urns, [DatasetPropertiesClass])
    return tuple(u for u in urns if named_by(u, target, dataset_aliases(
        aspect_of(props.get(u, {}), DatasetPropertiesClass))))


def one_table(graph: MetadataGraph, urns: tuple[str, ...]) -> tuple[str, ...]:
    """``urns`` with the twins of one table folded into the table (:func:`twin_of`), named as closures name it
    whether or not that description is among ``urns``. What stays is one URN per distinct table."""
    stands_for: dict[str, str] = {}
    pending, read_already = list(urns), set()
    while pending:  # the description a twin stands for is read in turn
        read = graph.get_aspects(pending, [UpstreamLineageClass, SiblingsClass])
        read_already.update(pending)
        for urn in pending:
            aspects = read.get(urn, {})
            twin = twin_of(aspect_of(aspects, UpstreamLineageClass), aspect_of(aspects, SiblingsClass))
            if twin is not None:
                stands_for[urn] = twin
        pending = sorted({stands_for[u] for u in pending if u in stands_for} - read_already)
    return tuple(dict.fromkeys(table_of(u, stands_for.get) for u in urns))


def recorded_columns(graph: MetadataGraph, urns: tuple[str, ...]) -> tuple[str, ...]:
    """The columns any of ``urns`` records in its schema, in order, once each."""
    read = graph.get_aspects(list(urns), [SchemaMetadataClass])
    found: dict[str, None] = {}
    for urn in urns:
        schema = aspect_of(read.get(urn, {}), SchemaMetadataClass)
        for field in schema.fields if schema else ():
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
