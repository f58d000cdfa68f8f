"""A model's whole upstream world, as one immutable value detectors can reason over.

A closure is assembled from views the resolver already read, so building one
per model costs no graph access: models sharing a warehouse share its reads.
Paths are kept for every entity so a finding can show *how* the model depends
on what it names, not merely that it does.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Mapping, Protocol

from recall_dagster.estate.names import MLFLOW_DATASET, assertion_named_by, display_name, named_by
from recall_dagster.estate.storage import is_object_store
from recall_dagster.estate.twins import table_of
from recall_dagster.estate.views import Assertion, Dataset, Deployment, Feature, FeatureTable, Model, TrainingRun

if TYPE_CHECKING:
    from recall_dagster.estate.columns import ColumnGraph

Path = tuple[str, ...]


class Closure(Protocol):
    """What the scan's stages after the read ask of any model's closure: its head (the model, its standing and
    deployments, which datasets and assertions it holds) and one dataset at a time; :meth:`whole` is the
    closure itself, for a detector judging it. A closure the last scan kept
    (:class:`~recall_dagster.kept.closures.KeptClosure`) answers the head from what was kept and decodes the
    rest only for :meth:`whole`: a rescan of 10,000 unchanged models asks nothing more of most of them."""

    @property
    def model(self) -> Model: ...

    @property
    def urn(self) -> str: ...

    @property
    def production(self) -> bool: ...

    @property
    def deployments(self) -> tuple[Deployment, ...]: ...

    @property
    def live_deployments(self) -> tuple[Deployment, ...]: ...

    @property
    def production_versions(self) -> tuple[str, ...]: ...

    @property
    def dataset_urns(self) -> tuple[str, ...]: ...

    @property
    def assertion_urns(self) -> tuple[str, ...]: ...

    @property
    def registered_model(self) -> str: ...

    @property
    def registered_name(self) -> str: ...

    def dataset(self, urn: str) -> Dataset: ...

    def whole(self) -> "ModelClosure": ...


class ModelNames:
    """What any closure derives from its model alone: the same for one read now and one the last scan kept."""

    __slots__ = ()
    model: Model

    @property
    def registered_model(self) -> str:
        return self.model.registered

    @property
    def registered_name(self) -> str:
        """The registry's name for the model (``fraud_detector``), as teams and CLIs call it."""
        return display_name(self.model.registered)


def live(deployments: Iterable[Deployment]) -> tuple[Deployment, ...]:
    """The deployments serving traffic."""
    return tuple(d for d in deployments if d.live)


@dataclass(frozen=True)
class ModelClosure(ModelNames):
    """Everything one model version depends on, as the graph describes it: the same metadata makes the same
    closure whenever it is read, and the instant a scan judges it at is the scan's
    (:class:`~recall_dagster.detect.state.DetectorState`), so a rescan keeps a closure as it was read."""

    model: Model
    production: bool
    features: tuple[Feature, ...] = ()
    feature_tables: tuple[FeatureTable, ...] = ()
    training_runs: tuple[TrainingRun, ...] = ()
    deployments: tuple[Deployment, ...] = ()
    datasets: Mapping[str, Dataset] = field(default_factory=dict)
    # URNs of the versions the registry marks production in this model's groups
    production_versions: tuple[str, ...] = ()
    # each entity the walk reached -> the one it was reached from (the model's own links from the model): the
    # paths as a tree, since a tuple per entity was a quarter of a million tuples to keep at 10,000 models
    parents: Mapping[str, str] = field(default_factory=dict)

    def whole(self) -> "ModelClosure":
        """Itself: it is whole (:class:`Closure`)."""
        return self

    @cached_property
    def urn(self) -> str:
        """Cached: a rescan of 10,000 models asks it some 160,000 times."""
        return self.model.urn

    @cached_property
    def dataset_urns(self) -> tuple[str, ...]:
        """The datasets it holds, by URN: what a scan asks of every closure (new baselines, who a dataset at
        risk endangers), answered without its kept body (:class:`~recall_dagster.kept.closures.KeptClosure`)."""
        return tuple(self.datasets)

    @cached_property
    def assertion_urns(self) -> tuple[str, ...]:
        """Every assertion on its datasets, by URN; kept with the head like :attr:`dataset_urns`."""
        return tuple(a.urn for d in self.datasets.values() for a in d.assertions)

    @property
    def read(self) -> frozenset[str]:
        """Every entity whose aspects went into the closure, as each view records what it was built from: a
        rescan reads the model again when one of them changed, and keeps the closure otherwise."""
        views: tuple[Model | Feature | FeatureTable | TrainingRun | Deployment | Dataset, ...] = (
            self.model, *self.features, *self.feature_tables, *self.training_runs, *self.deployments,
            *self.datasets.values())
        return frozenset(urn for view in views for urn in view.read_from)

    @cached_property
    def columns(self) -> "ColumnGraph":
        """This closure's column lineage, built once and shared by every detector that walks it."""
        from recall_dagster.estate.columns import column_graph  # columns names tables through closures

        return column_graph([self])

    @cached_property
    def live_deployments(self) -> tuple[Deployment, ...]:
        """Cached: scoring and the blast radius ask it of every closure."""
        return live(self.deployments)

    @property
    def training_inputs(self) -> tuple[str, ...]:
        """Datasets a recorded training run read, each named by :meth:`canonical`."""
        return tuple(dict.fromkeys(self.canonical(i) for r in self.training_runs for i in r.inputs))

    def canonical(self, urn: str) -> str:
        """One name for one table (:func:`~recall_dagster.estate.twins.table_of`): DataHub's sources describe
        one physical table several times (the warehouse table, its dbt node, the mlflow source's reference to
        it), and counting or comparing tables needs a single name for them."""
        current = self.datasets.get(urn)
        if current is None or not current.copy_of:
            return urn  # most tables have one name: no chain to walk
        return table_of(urn, self._copy_of)

    def _copy_of(self, urn: str) -> str | None:
        dataset = self.datasets.get(urn)
        return dataset.copy_of if dataset is not None else None

    @cached_property
    def twins(self) -> Mapping[str, tuple[Dataset, ...]]:
        """Each table the closure describes more than once (its :meth:`canonical` name) -> those descriptions,
        by URN; built once, so asking for a table's twins per subject stays linear in the closure. Most tables
        have one description and are not listed."""
        groups: dict[str, set[str]] = {}
        for urn, dataset in self.datasets.items():
            if dataset.copy_of:
                groups.setdefault(self.canonical(urn), set()).add(urn)
        for table, members in groups.items():
            if table in self.datasets:
                members.add(table)
        return {t: tuple(self.datasets[u] for u in sorted(m)) for t, m in sorted(groups.items()) if len(m) > 1}

    def same_table(self, urn: str) -> tuple[Dataset, ...]:
        """Every closure dataset that describes the same table as ``urn`` (its COPY chain)."""
        return self.twins.get(self.canonical(urn)) or (self.dataset(urn),)

    def upstream_tables(self, urn: str) -> frozenset[str]:
        """The tables ``urn``'s table is built from, by :meth:`canonical` name: what any of its twins records
        upstream, never the table itself (a warehouse view's lineage names its own dbt node beside what the view
        selects from, and that node is the view)."""
        table = self.canonical(urn)
        return frozenset(self.canonical(u) for d in self.same_table(urn) for u in d.upstreams) - {table}

    @cached_property
    def assertions(self) -> Mapping[str, Assertion]:
        """Every assertion on a dataset of the closure, by URN."""
        return {a.urn: a for d in self.datasets.values() for a in d.assertions}

    def named(self, urn: str, target: str) -> bool:
        """Whether ``target`` names what ``urn`` is: an assertion of the closure by its URN, name or a dbt
        test's name or ``unique_id`` (:func:`assertion_named_by`); a table by any twin's URN, ``platform:name``,
        full name, dotted suffix, or alias (a dbt node's ``unique_id``)."""
        assertion = self.assertions.get(urn)
        if assertion is not None:
            return assertion_named_by(urn, target, (assertion.name, *assertion.aliases))
        return any(named_by(d.urn, target, d.aliases) for d in self.same_table(urn))

    @property
    def unresolved_inputs(self) -> tuple[str, ...]:
        """Training inputs that remain MLflow dataset references: no catalogued table answers to their name."""
        return tuple(i for i in self.training_inputs if i.startswith(MLFLOW_DATASET))

    @property
    def has_training_record(self) -> bool:
        """True when at least one training run recorded what it read."""
        return bool(self.training_inputs)

    @property
    def feature_sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.canonical(s) for f in self.features for s in f.sources))

    @property
    def direct_inputs(self) -> tuple[str, ...]:
        """What the model reads without a hop: the tables its training runs read and its features' sources,
        each once, by :meth:`canonical` name."""
        return tuple(dict.fromkeys((*self.training_inputs, *self.feature_sources)))

    @cached_property
    def uncatalogued_sources(self) -> frozenset[str]:
        """Sources nothing catalogued of features kept on an object store: the store's path, which no stock
        source describes, and the table named beside it (SageMaker's feature store source names a group's
        S3 offline store and its Glue table). A coverage gap, not an orphan; a removed or deprecated one
        still orphans its features."""
        return frozenset(s for f in self.features if any(map(is_object_store, f.sources))
                         for s in f.sources if self.dataset(s).missing)

    @property
    def serving_features(self) -> tuple[Feature, ...]:
        """Features served through a feature table; all features when none is tabled.

        Without any feature table the model reads its features straight from
        their sources, so those sources are what serving uses.
        """
        tabled = tuple(f for f in self.features if f.tables)
        return tabled or self.features

    @property
    def serving_sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.canonical(s) for f in self.serving_features for s in f.sources))

    def dataset(self, urn: str) -> Dataset:
        return self.datasets.get(urn) or missing_dataset(urn)

    def upstream_of(self, urns: Iterable[str]) -> frozenset[str]:
        """The given datasets and everything upstream of them inside this closure."""
        seen: set[str] = set()
        queue = deque(u for u in urns if u in self.datasets)
        while queue:
            urn = queue.popleft()
            if urn in seen:
                continue
            seen.add(urn)
            queue.extend(u for u in self.datasets[urn].upstreams if u in self.datasets)
        return frozenset(seen)

    def walked(self, urn: str) -> Path:
        """The walk's path from the model to ``urn``, each step as reached (an entity it did not reach: a hop)."""
        model = self.model.urn
        if urn not in self.parents:
            return (urn,) if urn == model else (model, urn)
        steps = [urn]
        while steps[-1] in self.parents:
            steps.append(self.parents[steps[-1]])
        return tuple(reversed(steps))

    def path_to(self, urn: str) -> Path:
        """Model first, ``urn`` last; the serving route is preferred when there are several.

        A table shows once, under the last of its twins the walk passed (a dbt node
        reads its parent's warehouse twin, so a walk steps through both names).
        """
        walked = self.walked(urn)
        shown: list[str] = []
        last = None  # the canonical name of shown[-1]
        for step in walked:
            table = self.canonical(step)
            if shown and last == table:
                shown[-1] = step
            else:
                shown.append(step)
            last = table
        return tuple(shown)


def missing_dataset(urn: str) -> Dataset:
    """A dataset the closure does not hold: named, and missing."""
    return Dataset(urn=urn, name=display_name(urn), missing=True)


def assemble_closure(
    model: Model,
    *,
    production: bool,
    features: Mapping[str, Feature],
    feature_tables: Mapping[str, FeatureTable],
    training_runs: Mapping[str, TrainingRun],
    deployments: Mapping[str, Deployment],
    datasets: Mapping[str, Dataset],
    production_versions: tuple[str, ...],
    max_depth: int,
) -> ModelClosure:
    """Walk from the model out to every dataset within ``max_depth`` upstream hops.

    The walk is breadth first (shortest paths, cycle safe) and visits features
    before training runs, so evidence shows the serving route when one exists.
    Depth counts hops above the datasets features and runs read directly.
    """
    parents: dict[str, str] = {}
    depth: dict[str, int] = {}
    queue: deque[str] = deque()

    def visit(urn: str, parent: str, dataset_depth: int | None = None) -> None:
        if urn in parents or urn == model.urn:
            return
        parents[urn] = parent
        if dataset_depth is not None:
            depth[urn] = dataset_depth
        queue.append(urn)

    for urn in (*model.features, *model.training_runs, *model.deployments):
        visit(urn, model.urn)
    while queue:
        urn = queue.popleft()
        if urn in features:
            for source in features[urn].sources:
                visit(source, urn, 0)
        elif urn in training_runs:
            for source in training_runs[urn].inputs:
                visit(source, urn, 0)
        elif urn in depth and depth[urn] < max_depth:
            for upstream in datasets[urn].upstreams if urn in datasets else ():
                visit(upstream, urn, depth[urn] + 1)

    closure_features = tuple(features[u] for u in model.features if u in features)
    for feature in closure_features:
        for table in feature.tables:
            if table not in parents:
                parents[table] = feature.urn
    table_urns = dict.fromkeys(t for f in closure_features for t in f.tables)
    return ModelClosure(
        model=model,
        production=production,
        features=closure_features,
        feature_tables=tuple(feature_tables[t] for t in table_urns if t in feature_tables),
        training_runs=tuple(training_runs[u] for u in model.training_runs if u in training_runs),
        deployments=tuple(
            deployments[u] for u in model.deployments if u in deployments and deployments[u].serves(model.version)
        ),
        datasets={u: datasets.get(u) or missing_dataset(u) for u in depth},
        production_versions=production_versions,
        parents=parents,
    )
