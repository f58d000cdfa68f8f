"""Raise, update, resolve: the ledger transition, its file, the postmortem and the aspects written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from datahub.metadata.schema_classes import DocumentStateClass, IncidentInfoClass, IncidentStateClass
from lifecycle_estates import at, closure, estate, model_urn, record, span_for

from recall_dagster.graph.port import WriteReport
from recall_dagster.lifecycle.assess import RootCause, root_causes
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.config.load import load
from recall_dagster.lifecycle.incidents import ACTIVE, INCIDENT_TYPE, RESOLVED, incident_id, reconcile
from recall_dagster.lifecycle.ledger import Ledger
from recall_dagster.lifecycle.postmortem import postmortem
from recall_dagster.lifecycle.publish import incident_info, postmortem_info, publish, write_evidence
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.run import INCIDENTS_ON_MODELS
from recall_dagster.writeback.store import WritebackStore


@pytest.fixture(scope="module")
def lc() -> LifecycleConfig:
    return load().lifecycle


def causes(
    lc: LifecycleConfig, *history: tuple[float | None, str], rows: int = 223, trained: tuple[float, float] = (-3, 11)
) -> tuple[RootCause, ...]:
    """The hand-made estate with versions 1 and 2 trained for an hour from the given hours (version 1 before the
    passing run at hour 0, version 2 inside the window)."""
    world = estate([closure(1, live=True), closure(2, live=True)])
    spans = {model_urn(1): (span_for(trained[0], trained[0] + 1),), model_urn(2): (span_for(trained[1], trained[1] + 1),)}
    return root_causes([record(history, rows=rows, writes=(9, 19, 29, 39))], world, spans, lc)


FAILING = ((0, "SUCCESS"), (10, "FAILURE"))


def test_a_failing_cause_raises_one_incident_and_a_rerun_changes_nothing(lc: LifecycleConfig) -> None:
    first = reconcile({}, causes(lc, *FAILING), at(10.5))
    ((kind, entry),) = [(e.kind, e.entry) for e in first.events]
    assert kind == "raised" and entry.state == ACTIVE and entry.started_at_ms == at(10)
    assert entry.snapshot["blast_radius"]["models"][0]["summary"] == "1 of 4 features poisoned, 1 suspect"
    again = reconcile(first.entries, causes(lc, *FAILING), at(11))
    assert again.events == () and again.entries == first.entries


def test_a_changed_failure_updates_the_same_incident(lc: LifecycleConfig) -> None:
    first = reconcile({}, causes(lc, *FAILING), at(10.5))
    worse = reconcile(first.entries, causes(lc, *FAILING, (11, "FAILURE"), rows=400), at(11.5))
    ((event),) = worse.events
    assert event.kind == "updated" and event.entry.id in first.entries
    assert [t["event"] for t in event.entry.timeline] == ["raised", "updated"]
    assert not event.entry.published, "an update is written again"


def test_passing_tests_resolve_it_and_a_new_failure_is_a_new_incident(lc: LifecycleConfig) -> None:
    raised = reconcile({}, causes(lc, *FAILING), at(10.5))
    healed_history = (*FAILING, (20, "SUCCESS"))
    resolved = reconcile(raised.entries, causes(lc, *healed_history), at(21))
    ((event),) = resolved.events
    assert event.kind == "resolved" and event.entry.state == RESOLVED and event.entry.resolved_at_ms == at(21)
    assert event.entry.snapshot["window"]["open"] is False
    assert event.entry.snapshot["blast_radius"] == raised.entries[event.entry.id].snapshot["blast_radius"], (
        "the blast radius is what was hit while failing"
    )
    assert reconcile(resolved.entries, causes(lc, *healed_history), at(22)).events == ()
    relapse = reconcile(resolved.entries, causes(lc, *healed_history, (30, "FAILURE")), at(31))
    ((new),) = relapse.events
    assert new.kind == "raised" and new.entry.id not in resolved.entries


def test_the_ledger_round_trips_per_graph(lc: LifecycleConfig, tmp_path: Path) -> None:
    entries = reconcile({}, causes(lc, *FAILING), at(10.5)).entries
    Ledger(tmp_path, "a.db").save(entries)
    Ledger(tmp_path, "b.db").save({})
    assert Ledger(tmp_path, "a.db").load() == entries
    assert Ledger(tmp_path, "b.db").load() == {}


def test_the_postmortem_has_timeline_durations_blast_radius_versions_and_class(lc: LifecycleConfig, tmp_path: Path) -> None:
    raised = reconcile({}, causes(lc, *FAILING), at(10.5))
    healed = causes(lc, *FAILING, (20, "SUCCESS"))
    ((event),) = reconcile(raised.entries, healed, at(21)).events
    pm = postmortem(event.entry, healed[0], lc)
    assert pm.data["classification"] == {"failure_modes": ["completeness"], "impact": "contaminated-training"}
    assert pm.data["durations_ms"] == {
        "time_to_detect": at(10) - at(9),
        "time_to_raise": at(10.5) - at(10),
        "time_to_heal": at(20) - at(10),
        "time_to_resolve": at(21) - at(10.5),
    }
    assert [v["name"] for v in pm.data["contaminated_versions"]] == ["fraud_detector_2"]
    for heading in ("## Timeline", "## Durations", "## Blast radius", "## Contaminated versions"):
        assert heading in pm.text
    assert "roll back to fraud_detector_1" in pm.text and "1 of 4 features poisoned, 1 suspect" in pm.text
    files = write_evidence(tmp_path, event.entry, pm)
    assert [Path(f).name for f in files] == [f"{event.entry.id}.md", f"{event.entry.id}.json"]
    doc = postmortem_info(event.entry, pm)
    assert doc.status.state == DocumentStateClass.PUBLISHED and (doc.customProperties or {})["recall.managedBy"] == "recall-lifecycle"


def test_incident_aspects_name_models_and_fall_back_to_datasets(lc: LifecycleConfig) -> None:
    entry = next(iter(reconcile({}, causes(lc, *FAILING), at(10.5)).entries.values()))
    info = incident_info(entry, lc, None)
    assert info.customType == INCIDENT_TYPE and not info.customType.startswith("recall:")
    assert info.status.state == IncidentStateClass.ACTIVE and info.priority == 1, "HIGH: a quarter of the features confirmed"
    assert model_urn(2) in info.entities and "1 of 4 features poisoned, 1 suspect" in (info.description or "")
    assert all(e.startswith("urn:li:dataset:") for e in incident_info(entry, lc, None, on_models=False).entities)


def test_an_incident_title_shows_a_test_name_s_escape_sequences_written_out(lc: LifecycleConfig) -> None:
    """DataHub lists the incident by its title, and Slack and GitHub head their messages with it."""
    entry = next(iter(reconcile({}, causes(lc, *FAILING), at(10.5)).entries.values()))
    hostile = "not_null\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\\u202e"  # an OSC 8 link, a bidi override
    named = [{**a, "name": hostile} for a in entry.snapshot["assertions"]]
    info = incident_info(replace(entry, snapshot={**entry.snapshot, "assertions": named}), lc, None)
    assert info.title == "Poisoned data: not_null\\x1b]8;;http://evil\\x1b\\click\\x1b]8;;\\x1b\\\\u202e"


def test_a_postmortem_shows_a_test_s_name_as_text_never_as_markdown(lc: LifecycleConfig) -> None:
    """The postmortem is a Markdown document in DataHub and on disk: a test named with a link, HTML, a line
    break starting a heading or an escape sequence reads as those characters."""
    raised = reconcile({}, causes(lc, *FAILING), at(10.5))
    healed = causes(lc, *FAILING, (20, "SUCCESS"))
    ((event),) = reconcile(raised.entries, healed, at(21)).events
    hostile = "[click](http://evil)\n# owned <img src=x onerror=alert(1)>\x1b[2J"
    cause = replace(healed[0], records=tuple(replace(r, name=hostile) for r in healed[0].records))
    text = postmortem(event.entry, cause, lc).text
    assert r"\[click\](http://evil) # owned &lt;img src=x onerror=alert(1)&gt;\\x1b\[2J" in text
    assert "[click](" not in text and "<img" not in text and "\n# owned" not in text and "\x1b" not in text


def test_a_postmortem_names_only_the_versions_its_own_streak_contaminated(lc: LifecycleConfig) -> None:
    first = (*FAILING, (20, "SUCCESS"))
    second = (*first, (30, "FAILURE"))
    raised = reconcile({}, causes(lc, *second, trained=(11, 31)), at(30.5))
    healed = causes(lc, *second, (40, "SUCCESS"), trained=(11, 31))
    ((event),) = reconcile(raised.entries, healed, at(41)).events
    versions = {v.name: v.verdict.status.value for m in healed[0].models for v in m.versions}
    assert versions == {"fraud_detector_1": "CONTAMINATED", "fraud_detector_2": "CONTAMINATED"}, "both, over all time"
    pm = postmortem(event.entry, healed[0], lc)
    assert [v["name"] for v in pm.data["contaminated_versions"]] == ["fraud_detector_2"]


class RefusesModelTargets:
    """A graph that refuses incidents naming mlModels, as DataHub before PR #19112 does."""

    location = "stand-in"

    def __init__(self) -> None:
        self.stored: dict[str, object] = {}
        self.refusals = 0

    def get_aspects(self, urns, aspects=None):
        return {u: {} for u in urns}

    def emit_mcps(self, mcps):
        report = WriteReport()
        for mcp in mcps:
            info = mcp.aspect
            if isinstance(info, IncidentInfoClass) and any(e.startswith("urn:li:mlModel:") for e in info.entities):
                self.refusals += 1
                report.failures.append((mcp.entityUrn, mcp.aspectName, "HTTP 422: unsupported entity type"))
            else:
                self.stored[mcp.entityUrn] = info
                report.written += 1
        return report


def test_a_server_refusing_model_targets_gets_the_incident_on_the_datasets(lc: LifecycleConfig, tmp_path) -> None:
    entry = next(iter(reconcile({}, causes(lc, *FAILING), at(10.5)).entries.values()))
    graph = RefusesModelTargets()
    store = WritebackStore(tmp_path, graph.location)
    policy = RetryPolicy(attempts=1, backoff_seconds=0, max_backoff_seconds=0, budget_seconds=3600)
    outcome = publish(graph, [entry], {}, lc, policy, store)  # type: ignore[arg-type]
    assert outcome.landed == {entry.urn} and outcome.failures == []
    assert store.capability(INCIDENTS_ON_MODELS) is False, "the refusal is remembered with the scan's write-back"
    asked = RefusesModelTargets()
    publish(asked, [entry], {}, lc, policy, store)  # type: ignore[arg-type]
    assert asked.refusals == 0 and entry.urn in asked.stored, "a known refusal is not asked again"
    stored = graph.stored[entry.urn]
    assert isinstance(stored, IncidentInfoClass) and all(e.startswith("urn:li:dataset:") for e in stored.entities)
    assert "fraud_detector_2" in (stored.description or ""), "the models are named in its text"


def test_causes_without_origin_columns_keep_distinct_incident_ids(lc: LifecycleConfig) -> None:
    """Two table-level tests on tables with no known columns, failing at the same instant, are two incidents."""
    (cause,) = causes(lc, *FAILING)
    first = replace(cause, origins=())
    second = replace(first, records=(replace(cause.records[0], urn="urn:li:assertion:another-table"),))
    assert incident_id(first, at(10.5)) != incident_id(second, at(10.5))
    assert incident_id(first, at(10.5)) == incident_id(first, at(10.5)), "ids stay deterministic"
