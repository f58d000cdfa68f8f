"""``recall rollback`` and the ``recall_rollback`` Dagster job: one function, from the registry to the rescan.

The decision is :mod:`recall_dagster.lifecycle.rollback`'s; this module is its
edges. It reads the registry's versions and aliases and the blind window, plans,
and (asked to apply) keeps the record in this order: the evidence files, the
registry tags naming who and why, the alias move, then a DataHub document
rebuilt from those tags. A record that did not reach DataHub is written by the
next run, which finds the alias in place and the tags on the version. Then the
graph is opened afresh (the alias overlay reads the registry once per opening)
and the model scanned again, so the answer says what now serves and whether the
blind window clears it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, TypeVar

from datahub.emitter.mce_builder import datahub_guid
from datahub.metadata.schema_classes import DocumentInfoClass
from datahub.metadata.urns import DocumentUrn

from recall_dagster.acks.service import in_force
from recall_dagster.config.build import Configuration
from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.contracts.base import VERSION
from recall_dagster.detect import ScanConfig
from recall_dagster.errors import ConfigError, ServiceUnreachable
from recall_dagster.estate.marks import MANAGED_BY_KEY
from recall_dagster.files import write_record
from recall_dagster.home_scan import home_pipeline
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.instants import iso_instant
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.lifecycle.rollback import (
    RollbackPlan,
    RollbackRecord,
    RollbackRequest,
    plan_rollback,
    production_marks,
    standings,
)
from recall_dagster.lifecycle.service import assess
from recall_dagster.lifecycle.verdict import Status, VersionVerdict
from recall_dagster.mlflow_registry import RegistryLimits, failing, mlflow_client, sqlite_store, unreachable, version_numbers
from recall_dagster.results import ModelReport
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.direct import write_changed
from recall_dagster.writeback.documents import recall_document
from recall_dagster.writeback.state import GraphState
from recall_dagster.writeback.writes import Write

if TYPE_CHECKING:
    from mlflow import MlflowClient

T = TypeVar("T")
# Opens the graph (the argument: read-only); the CLI's refuses a Lite file that is not there, Dagster's is the resource's.
GraphOpener = Callable[[bool], AbstractContextManager[MetadataGraph]]
MANAGED = {MANAGED_BY_KEY: "recall-rollback"}  # not the scan's: its write-back must never stand this document down


@dataclass(frozen=True)
class Registry:
    """The registry's side of a rollback: where it is and how long to wait for it."""

    tracking_uri: str
    limits: RegistryLimits

    def ask(self, doing: str, act: Callable[["MlflowClient"], T]) -> T:
        """``act`` on the registry: exit 3 when it is missing or does not answer, exit 2 when it answers that
        the model is not there."""
        store = sqlite_store(self.tracking_uri)
        if store is not None and not store.exists():
            raise ServiceUnreachable(f"no MLflow registry at {store} (set MLFLOW_TRACKING_URI)")
        from mlflow.exceptions import MlflowException

        try:
            return act(mlflow_client(self.tracking_uri, self.limits))
        except Exception as err:
            if failing(err):
                raise unreachable(self.tracking_uri, doing, err) from None
            if isinstance(err, MlflowException) and err.error_code == "RESOURCE_DOES_NOT_EXIST":
                raise ConfigError(f"MLflow at {self.tracking_uri} answers while {doing}: {err.message}") from None
            raise

    def state(self, name: str) -> tuple[frozenset[str], dict[str, str]]:
        """The model's version numbers and its aliases (alias -> version)."""
        def read(client: "MlflowClient") -> tuple[frozenset[str], dict[str, str]]:
            aliases = {a: str(v) for a, v in (client.get_registered_model(name).aliases or {}).items()}
            return frozenset(str(v) for v in version_numbers(client, name)), aliases

        return self.ask(f"reading the versions and aliases of {name}", read)

    def tags(self, name: str, version: str) -> dict[str, str]:
        return self.ask(f"reading {name} version {version}", lambda c: dict(c.get_model_version(name, version).tags))

    def move(self, record: RollbackRecord) -> None:
        """The tags first, then the aliases: an alias never lands on a version that does not say why."""
        def act(client: "MlflowClient") -> None:
            for move in record.moves:
                for key, value in record.withdrawn_tags().items():
                    client.set_model_version_tag(record.model, move.from_version, key, value)
            for key, value in record.version_tags().items():
                client.set_model_version_tag(record.model, record.to_version, key, value)
            for move in record.moves:
                client.set_registered_model_alias(record.model, move.alias, record.to_version)

        self.ask(f"moving the production alias of {record.model} to version {record.to_version}", act)


@dataclass(frozen=True)
class AfterRollback:
    """The rescan: which versions the production aliases name now, as the blind window judges them, and the scan
    of the model's production versions."""

    served: Mapping[str, VersionVerdict | None]  # production alias -> the version it names, judged
    contaminated_live: tuple[str, ...]  # versions of the model still serving (deployed or marked production), convicted
    scanned: tuple[ModelReport, ...]

    @property
    def clean(self) -> bool:
        """Every production alias names a version the blind window clears."""
        return all(v is not None and v.verdict.status is Status.CLEAN for v in self.served.values())

    def contract(self) -> contracts.AfterRollback:
        return contracts.AfterRollback(
            served={a: (v.contract() if v else None) for a, v in sorted(self.served.items())},
            clean=self.clean,
            contaminated_live=list(self.contaminated_live),
            scan=[contracts.ScannedModel(name=m.closure.model.name, version=m.closure.model.version,
                                         production=m.closure.production, score=m.score.value, tier=m.score.tier,
                                         findings=len(m.findings))  # the open ones: what its score counts
                  for m in self.scanned],
        )


@dataclass(frozen=True)
class RollbackResult:
    plan: RollbackPlan
    applied: bool  # False: a dry run, nothing written
    record: RollbackRecord | None  # written now, or found on the target when the aliases were there already
    evidence: tuple[str, ...] = ()
    document: str | None = None
    writes: int = 0  # DataHub writes that landed (0 when the document was already there)
    failures: tuple[str, ...] = ()  # DataHub writes that did not land: the next run writes them
    after: AfterRollback | None = None

    def contract(self) -> contracts.Rollback:
        return contracts.Rollback(
            schema_version=VERSION,
            applied=self.applied,
            plan=self.plan.contract(),
            record=self.record.contract() if self.record else None,
            evidence=list(self.evidence),
            document=self.document,
            writes=self.writes,
            failures=list(self.failures),
            after=self.after.contract() if self.after else None,
        )


def document_urn(record: RollbackRecord) -> str:
    return DocumentUrn(datahub_guid({"recall": "rollback", "rollback": record.ident})).urn()


def _record_in_graph(
    graph: MetadataGraph, record: RollbackRecord, related: Sequence[str], policy: RetryPolicy, now_ms: int,
) -> tuple[str, int, list[str]]:
    """The rollback's document in DataHub, about the versions it moved between; only what the graph lacks is sent."""
    urn = document_urn(record)

    def build(state: GraphState) -> list[Write]:
        info = recall_document(record.title, record.markdown(), f"recall-rollback:{record.ident}", related,
                               {**MANAGED, "recall.model": record.model, "recall.rollback.to": record.to_version},
                               state.aspect(urn, DocumentInfoClass), now_ms)
        return [Write.of("document", urn, info, record.title)]

    landed, failures = write_changed(graph, [urn], [DocumentInfoClass], build, policy)
    return urn, landed, failures


def _rescan(graph: MetadataGraph, settings: Settings, loaded: Configuration, registry: Registry, model: str,
            now_ms: int) -> AfterRollback:
    config = loaded.scan
    _, aliases = registry.state(model)
    assessment = assess(graph, config, loaded.lifecycle, now_ms)
    judged = standings(model, assessment.estate.closures, assessment.causes)
    marked = production_marks(aliases, config.resolve.production_aliases)
    live = tuple(v.name for v in judged.values() if v.serves and v.verdict.status is Status.CONTAMINATED)
    scanned = home_pipeline(settings, loaded, measured=False).scan(
        graph, scanned_at_ms=now_ms, models=[model], acks=in_force(graph, settings, config.acknowledgements))
    return AfterRollback({a: judged.get(v) for a, v in marked.items()}, live, scanned.models)


def roll_back(
    open_graph: GraphOpener,
    settings: Settings,
    loaded: Configuration,
    registry: Registry,
    request: RollbackRequest,
    now_ms: int,
    *,
    apply: bool = False,
    run: str = "",
) -> RollbackResult:
    """Plan the rollback ``request`` asks for; with ``apply``, make it, record it, and scan the model again.

    A dry run (the default) writes nothing anywhere. Applying again once the
    aliases are on the target moves nothing and records nothing new: it only
    writes the DataHub document if an earlier run could not.
    """
    name = request.registered
    config, lc = loaded.scan, loaded.lifecycle
    versions, aliases = registry.state(name)
    if not apply:
        with open_graph(True) as graph:
            return RollbackResult(_plan(graph, config, lc, request, versions, aliases, now_ms)[0], False, None)
    with settings.writing("rollback", "recall rollback"):  # one rollback at a time: its plan holds while it moves
        with open_graph(False) as graph:
            plan, judged = _plan(graph, config, lc, request, versions, aliases, now_ms)
            evidence: tuple[str, ...] = ()
            if plan.done:
                record = RollbackRecord.from_tags(name, plan.to_version, registry.tags(name, plan.to_version))
            else:
                record = RollbackRecord.of(plan, iso_instant(now_ms), run)
                evidence = tuple(str(p) for p in write_record(settings.evidence_dir / "rollback", record.ident,
                                                              record.contract().as_json(), record.markdown(),
                                                              "evidence"))
                registry.move(record)
            document: str | None = None
            writes = 0
            failures: list[str] = []
            if record is not None:
                related = [v.model for v in (judged.get(record.to_version),
                                             *(judged.get(m.from_version) for m in record.moves)) if v is not None]
                document, writes, failures = _record_in_graph(graph, record, related, loaded.writeback.retry,
                                                               now_ms)
        with open_graph(True) as fresh:
            after = _rescan(fresh, settings, loaded, registry, name, now_ms)
    return RollbackResult(plan, True, record, evidence, document, writes, tuple(failures), after)


def _plan(
    graph: MetadataGraph, config: ScanConfig, lc: LifecycleConfig, request: RollbackRequest,
    versions: frozenset[str], aliases: Mapping[str, str], now_ms: int,
) -> tuple[RollbackPlan, dict[str, VersionVerdict]]:
    """The plan, and the blind window's standing of every version it was judged on."""
    assessment = assess(graph, config, lc, now_ms)
    judged = standings(request.registered, assessment.estate.closures, assessment.causes)
    return plan_rollback(request, versions, aliases, config.resolve.production_aliases, judged), judged
