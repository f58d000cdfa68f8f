"""Typed, immutable views of the entities a model depends on.

Detectors reason about these instead of raw aspects so that the rules stay
readable and every quirk of how DataHub stores a fact (legacy fields, three
places a freshness time can live, field paths in two formats) is resolved once,
in :mod:`recall_dagster.estate.parse`.  Every view of a URN the graph knows
nothing about carries ``missing=True`` instead of disappearing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import takewhile
from typing import Mapping, NamedTuple

FieldRef = tuple[str, str]  # (dataset URN, simple field path)


@dataclass(frozen=True)
class Term:
    """A glossary term as attached to a dataset or field; ``name`` is its display name."""

    urn: str
    name: str


@dataclass(frozen=True)
class Owner:
    """An owner of an entity; ``active`` is False when the person has left."""

    urn: str
    active: bool = True


@dataclass(frozen=True)
class SchemaField:
    path: str  # simple field path (v2 paths are reduced to the dotted form)
    type: str  # the platform's native type when known, DataHub's type otherwise
    tags: tuple[str, ...] = ()  # tag names
    terms: tuple[Term, ...] = ()
    description: str | None = None


@dataclass(frozen=True)
class ColumnEdge:
    """One column-level lineage edge: ``upstream`` feeds ``downstream``."""

    upstream: FieldRef
    downstream: FieldRef


class AssertionResult(NamedTuple):
    """One completed run of an assertion, as far as a judgement needs it.

    A tuple, not a dataclass: a snapshot of an estate keeps some twenty runs of every assertion (360,000 at
    10,000 models), and rebuilding them was 40% of loading one; a tuple is rebuilt by ``tuple.__new__``
    alone (:meth:`__reduce__`), three times faster than the class's own ``__new__``."""

    at_ms: int
    result: str
    failed_rows: int | None = None
    metric: tuple[str, float] | None = None
    detail: str | None = None

    def __reduce__(self) -> tuple:
        return tuple.__new__, (type(self), tuple(self))


@dataclass(frozen=True)
class Assertion:
    """An assertion on a dataset with its latest completed result."""

    urn: str
    name: str
    column: str | None = None
    result: str | None = None  # SUCCESS / FAILURE / ERROR, None when never run
    failed_rows: int | None = None  # only from results that count rows
    metric: tuple[str, float] | None = None  # a metric or volume assertion's value, under its own name
    bound: str = ""  # what the assertion holds that value to (", expected ≥ 40,000"), from its parameters
    ran_at_ms: int | None = None
    detail: str | None = None  # the native result message, when the runner gave one
    since_ms: int | None = None  # the first run of the streak the latest result belongs to (within the runs read)
    aliases: tuple[str, ...] = ()  # other names it goes by: a dbt test's unique_id and its own name
    history: tuple[AssertionResult, ...] = ()  # the completed runs read, newest first (the latest among them)

    def as_of(self, instant_ms: int) -> "Assertion":
        """The assertion as it stood at ``instant_ms``: a run made after it is not yet known (``--as-of``)."""
        if self.ran_at_ms is None or self.ran_at_ms <= instant_ms:
            return self
        earlier = [r for r in self.history if r.at_ms <= instant_ms]
        if not earlier:
            return replace(self, result=None, failed_rows=None, metric=None, ran_at_ms=None, detail=None,
                           since_ms=None)
        latest = earlier[0]
        streak = list(takewhile(lambda r: r.result == latest.result, earlier))
        return replace(self, result=latest.result, failed_rows=latest.failed_rows, metric=latest.metric,
                       ran_at_ms=latest.at_ms, detail=latest.detail, since_ms=streak[-1].at_ms)


@dataclass(frozen=True)
class ColumnProfile:
    """One column's statistics in a profile; a statistic the profiler did not compute (or that is not a number,
    like a date's min) is None."""

    null_fraction: float | None = None
    distinct: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    mean: float | None = None
    stdev: float | None = None


@dataclass(frozen=True)
class Profile:
    """A ``datasetProfile``: the table's row count and its columns' statistics at one instant."""

    at_ms: int
    row_count: int | None = None
    columns: Mapping[str, ColumnProfile] = field(default_factory=dict)


@dataclass(frozen=True)
class Freshness:
    updated_ms: int
    source: str  # "operation", "build" (a successful run that wrote it), "lastModified" or "property:<name>"


@dataclass(frozen=True)
class Dataset:
    urn: str
    name: str
    missing: bool = False
    removed: bool = False
    deprecated: bool = False
    deprecation_note: str | None = None
    replacement: str | None = None
    description: str | None = None
    fields: tuple[SchemaField, ...] | None = None  # None when no schema is recorded
    owners: tuple[Owner, ...] = ()
    tags: tuple[str, ...] = ()
    terms: tuple[Term, ...] = ()
    upstreams: tuple[str, ...] = ()
    copy_of: str | None = None  # the description of the same table this one stands for (estate.twins)
    column_lineage: tuple[ColumnEdge, ...] = ()
    # operation history as (reported at, data last updated at), newest report first
    operations_ms: tuple[tuple[int, int], ...] = ()
    builds_ms: tuple[int, ...] = ()  # when a run that writes it (a dbt model's build) last succeeded, newest first
    written_by: tuple[str, ...] = ()  # the orchestrator jobs recorded as writing it: 'dagster: dbt_build/dbt_warehouse'
    writer_urns: tuple[str, ...] = ()  # those jobs and their flows, whose aspects give those names
    last_modified_ms: int | None = None
    property_updated_ms: int | None = None
    property_name: str | None = None
    assertions: tuple[Assertion, ...] = ()
    profiles: tuple[Profile, ...] = ()  # newest first
    aliases: tuple[str, ...] = ()  # other names it answers to: a dbt node's unique_id

    @property
    def read_from(self) -> tuple[str, ...]:
        """The entities whose aspects this view was built from (:attr:`ModelClosure.read`): a change to any of
        them is a change to the dataset as a model sees it."""
        return (self.urn, *(a.urn for a in self.assertions), *(o.urn for o in self.owners), *self.writer_urns,
                *(t.urn for t in self.terms), *(t.urn for f in self.fields or () for t in f.terms))

    @property
    def has_active_owner(self) -> bool:
        return any(o.active for o in self.owners)

    def column(self, path: str) -> SchemaField | None:
        for f in self.fields or ():
            if f.path == path:
                return f
        return None

    def profile_at(self, instant_ms: int) -> Profile | None:
        """The newest profile taken at or before ``instant_ms``: the data as it stood then."""
        return next((p for p in self.profiles if p.at_ms <= instant_ms), None)

    def freshness_at(self, instant_ms: int) -> Freshness | None:
        """When the data last changed as seen at ``instant_ms``; None when nobody recorded it.

        Four signals may say: operations (the newest report speaks for them,
        even if older ones were rosier), the successful runs that write it (a
        dbt model's builds, as DataHub's dbt source records them from
        ``run_results.json``), the platform's own ``lastModified`` (or the
        ``max_loaded_at`` dbt's source freshness found), and a custom property
        some teams stamp on tables.  The newest change any of them records wins,
        whichever carries it: an old operation does not make a table stale that
        the platform saw written since.  Reports made after the instant are
        ignored so ``--as-of`` replays the past.
        """
        seen: list[Freshness] = []
        reports = [updated for reported, updated in self.operations_ms if reported <= instant_ms]
        if reports:
            seen.append(Freshness(min(reports[0], instant_ms), "operation"))
        built = next((ms for ms in self.builds_ms if ms <= instant_ms), None)
        if built is not None:
            seen.append(Freshness(built, "build"))
        if self.last_modified_ms is not None and self.last_modified_ms <= instant_ms:
            seen.append(Freshness(self.last_modified_ms, "lastModified"))
        if self.property_updated_ms is not None and self.property_updated_ms <= instant_ms:
            seen.append(Freshness(self.property_updated_ms, f"property:{self.property_name}"))
        return max(seen, key=lambda f: f.updated_ms, default=None)  # ties: the first listed, the most direct


@dataclass(frozen=True)
class Feature:
    """An ML feature; ``name`` is its bare name (the column it is usually computed as)."""

    urn: str
    name: str
    missing: bool = False
    removed: bool = False
    sources: tuple[str, ...] = ()  # dataset URNs
    tables: tuple[str, ...] = ()  # feature tables that contain it (the serving path)
    column: str | None = None  # the source column, when the feature records it in a custom property

    @property
    def read_from(self) -> tuple[str, ...]:
        """The feature, and the feature tables whose aspects say they serve it."""
        return (self.urn, *self.tables)


@dataclass(frozen=True)
class FeatureTable:
    urn: str
    name: str
    missing: bool = False
    features: tuple[str, ...] = ()

    @property
    def read_from(self) -> tuple[str, ...]:
        return (self.urn,)


@dataclass(frozen=True)
class TrainingRun:
    """A training run (dataProcessInstance) or job (dataJob) and the datasets it read."""

    urn: str
    name: str
    missing: bool = False
    inputs: tuple[str, ...] = ()  # dataset URNs, from inputEdges and legacy inputs
    created_ms: int | None = None  # when the run was created (its start, as DataHub's mlflow source records it)

    @property
    def read_from(self) -> tuple[str, ...]:
        return (self.urn,)


@dataclass(frozen=True)
class Deployment:
    urn: str
    name: str
    missing: bool = False
    status: str | None = None
    live: bool = False
    version: str | None = None  # the model version it records serving (Vertex, SageMaker), when it says

    def serves(self, model_version: str | None) -> bool:
        """Whether it serves that version: its recorded version decides when present, else being listed does."""
        return self.version is None or model_version is None or self.version == model_version

    @property
    def read_from(self) -> tuple[str, ...]:
        return (self.urn,)


@dataclass(frozen=True)
class Model:
    """One model version (DataHub ``mlModel``)."""

    urn: str
    name: str
    missing: bool = False
    removed: bool = False
    version: str | None = None
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # tag names on the version and its registered model group
    groups: tuple[str, ...] = ()  # registered model groups / version sets it belongs to
    owners: tuple[Owner, ...] = ()  # the version's owners, else its group's
    properties: Mapping[str, str] = field(default_factory=dict)  # custom properties, group's merged under
    features: tuple[str, ...] = ()
    training_runs: tuple[str, ...] = ()
    deployments: tuple[str, ...] = ()
    registry_production: bool = False  # carries a production alias or stage tag

    @property
    def chosen_by(self) -> frozenset[str]:
        """What decides whether the model is scanned: the version, its groups (aliases, stage tags) and
        deployments."""
        return frozenset({self.urn, *self.groups, *self.deployments})

    @property
    def read_from(self) -> tuple[str, ...]:
        """What chose it, its owners, and the features and runs its aspects name."""
        return (*self.chosen_by, *(o.urn for o in self.owners), *self.features, *self.training_runs)

    @property
    def has_active_owner(self) -> bool:
        return any(o.active for o in self.owners)

    @property
    def registered(self) -> str:
        """The registered model (model group) this version belongs to; the version itself when it has none."""
        groups = self.groups
        return next((g for g in groups if g.startswith("urn:li:mlModelGroup:")), groups[0] if groups else self.urn)
