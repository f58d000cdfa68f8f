"""Column-level lineage over the whole estate, one name per physical column.

DataHub's sources describe one table several times (the warehouse table, its
dbt node, the mlflow source's reference to it) and spread column lineage across
them: dbt nodes read the warehouse twins of their parents, and COPY edges join
the twins.  Naming every column by its table's canonical twin
(:meth:`ModelClosure.canonical`) turns that into one graph where COPY edges
vanish and a walk never stalls at a twin.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from recall_dagster.estate import Closure, ModelClosure, display_name
from recall_dagster.estate.views import Dataset, FieldRef

Col = tuple[str, str]  # (canonical dataset URN, simple column path)


def column_name(col: Col) -> str:
    return f"{display_name(col[0])}.{col[1]}"


@dataclass(frozen=True)
class ColumnGraph:
    canonical: Mapping[str, str]  # every dataset URN seen -> its canonical twin
    upstream: Mapping[Col, tuple[Col, ...]]
    downstream: Mapping[Col, tuple[Col, ...]]
    columns: Mapping[str, tuple[str, ...]]  # canonical dataset -> every column any twin records
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # dataset -> other names (dbt unique_id)

    def col(self, ref: FieldRef) -> Col:
        urn, path = ref
        return (self.canonical.get(urn, urn), path)

    def ancestry(self, col: Col) -> set[Col]:
        """``col`` and every column it derives from."""
        seen = {col}
        queue = deque([col])
        while queue:
            parents = [p for p in self.upstream.get(queue.popleft(), ()) if p not in seen]
            seen.update(parents)
            queue.extend(parents)
        return seen

    def feeding(self, closure: ModelClosure) -> dict[Col, tuple[str, ...]]:
        """Every column a feature of ``closure`` reads, directly or through lineage, with the features it feeds."""
        fed: dict[Col, dict[str, None]] = {}
        for feature in closure.features:
            wanted = feature.column or feature.name
            for source in feature.sources:
                table = self.canonical.get(source, source)
                if wanted not in self.columns.get(table, ()):
                    continue
                for col in self.ancestry((table, wanted)):
                    fed.setdefault(col, {})[feature.name] = None
        return {col: tuple(sorted(names)) for col, names in fed.items()}

    def origins(self, col: Col) -> tuple[Col, ...]:
        """The columns with no upstream that ``col`` derives from; itself when lineage stops there."""
        roots = {c for c in self.ancestry(col) if not self.upstream.get(c)}
        return tuple(sorted(roots)) or (col,)  # a pure cycle has no root: it starts where it was entered

    def starts(self, changed: Iterable[Col]) -> dict[Col, Col]:
        """Each changed column -> the changed column above it where the change starts; itself when none is.

        A change that flows down lineage (a retyped raw column retypes its staging
        and mart copies) is one change: reported where it starts, listing where it went.
        """
        wanted = set(changed)
        above = {c: (self.ancestry(c) - {c}) & wanted for c in wanted}
        return {c: min((a for a in ups if not above[a]), default=c) for c, ups in above.items()}

    def reach(self, cols: Iterable[Col]) -> dict[Col, Col | None]:
        """Every column downstream of ``cols`` (them included), each with the column it was reached from."""
        parent: dict[Col, Col | None] = {c: None for c in cols}
        queue = deque(parent)
        while queue:
            current = queue.popleft()
            for child in self.downstream.get(current, ()):
                if child not in parent:
                    parent[child] = current
                    queue.append(child)
        return parent


def lineage_to(col: Col, parents: Mapping[Col, Col | None]) -> tuple[Col, ...]:
    """The chain from the root of a :meth:`ColumnGraph.reach` walk down to ``col``."""
    chain = [col]
    while (up := parents.get(chain[-1])) is not None:
        chain.append(up)
    return tuple(reversed(chain))


def same_columns(before: Closure, after: Closure) -> bool:
    """Whether ``after`` adds to the estate's column lineage exactly what ``before`` did: the same datasets,
    in the same order, each with the same twins, aliases, columns and column lineage (what
    :func:`column_graph` reads).  A retyped column or a new assertion run changes none of it."""
    if before.dataset_urns != after.dataset_urns:
        return False
    return all(_column_inputs(before.dataset(u)) == _column_inputs(after.dataset(u)) for u in after.dataset_urns)


def _column_inputs(dataset: Dataset) -> tuple:
    return dataset.copy_of, dataset.aliases, tuple(f.path for f in dataset.fields or ()), dataset.column_lineage


def column_graph(any_closures: Sequence[Closure]) -> ColumnGraph:
    """The estate's column lineage, from every dataset any closure holds (each read whole)."""
    closures = [c.whole() for c in any_closures]
    canonical: dict[str, str] = {}
    for closure in closures:
        for urn in closure.datasets:
            if urn not in canonical:  # closures share their tables: each is named once
                canonical[urn] = closure.canonical(urn)
    ups: dict[Col, dict[Col, None]] = {}
    downs: dict[Col, dict[Col, None]] = {}
    columns: dict[str, dict[str, None]] = {}
    seen: set[str] = set()
    aliases: dict[str, tuple[str, ...]] = {}
    for closure in closures:
        for urn, dataset in closure.datasets.items():
            if urn in seen:
                continue
            seen.add(urn)
            if dataset.aliases:
                aliases[urn] = dataset.aliases
            columns.setdefault(canonical[urn], {}).update(dict.fromkeys(f.path for f in dataset.fields or ()))
            for edge in dataset.column_lineage:
                up = (canonical.get(edge.upstream[0], edge.upstream[0]), edge.upstream[1])
                down = (canonical.get(edge.downstream[0], edge.downstream[0]), edge.downstream[1])
                if up == down:  # a COPY between twins: the same column
                    continue
                ups.setdefault(down, {})[up] = None
                downs.setdefault(up, {})[down] = None
                for c in (up, down):
                    columns.setdefault(c[0], {})[c[1]] = None
    return ColumnGraph(
        canonical=canonical,
        upstream={c: tuple(sorted(p)) for c, p in ups.items()},
        downstream={c: tuple(sorted(p)) for c, p in downs.items()},
        columns={u: tuple(c) for u, c in columns.items()},
        aliases=aliases,
    )
