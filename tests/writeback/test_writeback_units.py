"""The small pieces: deterministic URNs, the config section, retries, the store."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import AssertionResultClass, AssertionRunEventClass, StatusClass

from recall_dagster.config.overlay import merge
from recall_dagster.errors import ConfigError, ServiceUnreachable
from recall_dagster.graph.port import WriteReport
from recall_dagster.config.load import configuration, load_yaml_config
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.emit import emit
from recall_dagster.writeback.retry import RetryingReads
from recall_dagster.writeback.keys import assertion_urn, document_urn, incident_urn
from recall_dagster.writeback.store import WritebackStore
from recall_dagster.writeback.writes import Write

DATASET = "urn:li:dataset:(urn:li:dataPlatform:x,a,PROD)"
POLICY = RetryPolicy(attempts=3, backoff_seconds=0.5, max_backoff_seconds=1, budget_seconds=3600)


def test_urns_depend_only_on_what_they_are_about() -> None:
    assert assertion_urn("upstream_staleness", DATASET) == assertion_urn("upstream_staleness", DATASET)
    assert assertion_urn("upstream_staleness", DATASET) != assertion_urn("ownership_vacuum", DATASET)
    assert incident_urn("upstream_staleness", DATASET).startswith("urn:li:incident:")
    assert incident_urn("a", DATASET).split(":")[-1] != assertion_urn("a", DATASET).split(":")[-1]
    assert document_urn("urn:li:mlModel:(urn:li:dataPlatform:x,m,PROD)").startswith("urn:li:document:")


def _section(**override: object) -> dict:
    """The shipped recall.yaml with ``override`` laid over its writeback section."""
    return merge(load_yaml_config()[0], {"writeback": override})


def test_the_shipped_section_is_all_off_and_typed() -> None:
    config = configuration(_section(), "recall.yaml").writeback
    assert config.slack is None and config.github is None
    assert config.tags == {"CRITICAL": "recall:critical", "AT_RISK": "recall:at-risk"}
    assert config.retry.delay(1) == 1 and config.retry.delay(10) == 30  # doubling, capped


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"tags": {"CRITICAL": "critical"}}, "`writeback.tags.CRITICAL` must be a tag name starting with 'recall:'"),
        ({"tags": {"CRITICAL": "recall:managed"}}, "`writeback.tags.CRITICAL` must not be 'recall:managed', which marks Recall's own"),
        ({"retry": {"attempts": 0}}, "`writeback.retry.attempts` must be an integer >= 1, not 0"),
        ({"notify": None}, "`writeback.notify` must be a mapping, not null"),
        ({"incident_severity": "LOUD"}, "`writeback.incident_severity` must be one of CRITICAL, WARN, INFO"),
        ({"notify": {"github": {"enabled": True}}}, "`writeback.notify.github.repo` must name owner/name when github is enabled"),
    ],
)
def test_config_mistakes_name_the_key(override: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        configuration(_section(**override), "recall.yaml").writeback


def test_tier_names_must_be_the_scans() -> None:
    with pytest.raises(ConfigError, match="`writeback.document_tier` names tier 'SCARY', which scoring.tiers does not"):
        configuration(_section(document_tier="SCARY"), "recall.yaml")


@dataclass
class Flaky:
    """A graph whose write calls fail as scripted: per call, the (urn, reason) failures to report, or an error."""

    script: list[object]
    calls: list[list[str]] = field(default_factory=list)
    location: str = "flaky"

    def emit_mcps(self, mcps) -> WriteReport:
        batch = list(mcps)
        self.calls.append([m.entityUrn for m in batch])
        step = self.script.pop(0) if self.script else []
        if isinstance(step, Exception):
            raise step
        aspect = {m.entityUrn: m.aspectName for m in batch}
        failures = [(urn, aspect[urn], reason) for urn, reason in step]  # type: ignore[attr-defined]
        return WriteReport(written=len(batch) - len(failures), failures=failures)


def _event(urn: str, at: int) -> Write:
    aspect = AssertionRunEventClass(
        timestampMillis=at, runId="r", asserteeUrn=DATASET, assertionUrn=urn, status="COMPLETE",
        result=AssertionResultClass(type="FAILURE"),
    )
    return Write("assertion", MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect), f"run {at}")


def _status(urn: str) -> Write:
    return Write("document", MetadataChangeProposalWrapper(entityUrn=urn, aspect=StatusClass(removed=False)), urn)


BUSY = "HTTP 503 busy"


def test_only_what_failed_is_sent_again_after_a_backoff() -> None:
    writes = [_event("urn:li:assertion:a", 1), _status("urn:li:document:d")]
    graph = Flaky(script=[[("urn:li:document:d", BUSY)], ServiceUnreachable("no answer"), []])
    waits: list[float] = []

    outcome = emit(graph, writes, POLICY, waits.append)  # type: ignore[arg-type]

    assert graph.calls == [[w.urn for w in writes], ["urn:li:document:d"], ["urn:li:document:d"]]
    assert waits == [0.5, 1]  # doubling, capped at max_backoff_seconds
    assert [w.why for w in outcome.landed] == ["run 1", "urn:li:document:d"] and not outcome.pending


def test_two_events_of_one_assertion_are_told_apart() -> None:
    writes = [_event("urn:li:assertion:a", 1), _event("urn:li:assertion:a", 2)]
    graph = Flaky(script=[[("urn:li:assertion:a", BUSY)]])  # one of the two failed: the first, in order

    outcome = emit(graph, writes, POLICY, lambda _: None)  # type: ignore[arg-type]

    assert [w.why for w in outcome.landed] == ["run 2", "run 1"] and len(graph.calls[1]) == 1


def test_refusals_are_not_retried_and_what_keeps_failing_is_pending() -> None:
    refused, busy = "urn:li:document:refused", "urn:li:document:busy"
    graph = Flaky(script=[[(refused, "HTTP 422 no such entity"), (busy, BUSY)], [(busy, BUSY)], [(busy, BUSY)]])

    outcome = emit(graph, [_status(refused), _status(busy)], POLICY, lambda _: None)  # type: ignore[arg-type]

    assert [w.urn for w, _ in outcome.refused] == [refused]
    assert [(w.urn, reason) for w, reason in outcome.pending] == [(busy, BUSY)]
    assert graph.calls[1:] == [[busy], [busy]] and outcome.attempts == POLICY.attempts


def test_the_store_keeps_events_only_and_graphs_apart(tmp_path) -> None:
    lite, gms = WritebackStore(tmp_path, "/tmp/a.db"), WritebackStore(tmp_path, "http://gms:8080")
    lite.save_pending([_event("urn:li:assertion:a", 1), _status("urn:li:document:d")])
    gms.save_capabilities({"incident_on_mlModel": False})

    assert [w.why for w in lite.pending()] == ["run 1"]  # state is re-planned, never carried
    assert gms.pending() == [] and lite.capability("incident_on_mlModel") is None
    assert gms.capability("incident_on_mlModel") is False
    lite.save_pending([])
    assert lite.pending() == [] and gms.capability("incident_on_mlModel") is False


def test_retries_stop_when_the_run_has_waited_its_budget() -> None:
    """Ten attempts with doubling backoff would wait 1+2+4+... minutes; the budget ends it after 3 seconds."""
    patient = RetryPolicy(attempts=10, backoff_seconds=1, max_backoff_seconds=60, budget_seconds=3)
    down = Flaky(script=[ServiceUnreachable("no answer")] * 10)
    waits: list[float] = []
    outcome = emit(down, [_status("urn:li:document:d")], patient, waits.append)  # type: ignore[arg-type]
    assert waits == [1, 2] and len(down.calls) == 3, "a third wait of 4 s would pass the 3 s budget"
    assert [w.urn for w, _ in outcome.pending] == ["urn:li:document:d"] and outcome.unreachable


class DownReads:
    location = "down"

    def __init__(self) -> None:
        self.calls = 0

    def list_urns(self, entity_type: str) -> list[str]:
        self.calls += 1
        raise ServiceUnreachable("GMS at http://gms: no answer listing mlModel")


def test_reads_share_one_budget_across_the_run() -> None:
    waits: list[float] = []
    policy = RetryPolicy(attempts=5, backoff_seconds=1, max_backoff_seconds=60, budget_seconds=4)
    reads = RetryingReads(DownReads(), policy, waits.append)  # type: ignore[arg-type]
    with pytest.raises(ServiceUnreachable):
        reads.list_urns("mlModel")
    assert waits == [1, 2], "1 + 2 + 4 would pass the 4 s budget"
    with pytest.raises(ServiceUnreachable):
        reads.list_urns("mlModel")
    assert waits == [1, 2, 1], "the next read has only what is left of the budget"
