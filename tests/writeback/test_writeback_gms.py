"""Write-back through GmsGraph against a fake GMS that fails, drops and refuses writes.

Every request goes over HTTP to :class:`WritebackGms`, so what is tested is
the real SDK client, the real adapter and Recall's retries at the HTTP
boundary.  No live DataHub is involved.
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from contextlib import closing

import pytest
from datahub.metadata.schema_classes import IncidentInfoClass
from wb_support import BREAK, HEALTHY, MODEL, USER_STATS, lite_estate, scan

from recall_dagster.errors import EXIT_UNREACHABLE, ServiceUnreachable
from recall_dagster.graph import GmsGraph, LiteGraph
from recall_dagster.writeback.run import write_back
from recall_dagster.writeback.store import WritebackStore

T1, T2 = 1_750_000_000_000, 1_750_003_600_000


def _key(urn: str, aspect: str, value: str) -> tuple[str, ...]:
    stamp = json.loads(value).get("timestampMillis")
    return (urn, aspect) if stamp is None else (urn, aspect, str(stamp))


def _evidence(report) -> set[str]:
    return {p.name for p in report.evidence_dir.iterdir()}


@pytest.mark.parametrize(
    ("every", "burst", "sdk_retries"),
    [(3, 1, 0), (4, 2, 1)],
    ids=["a third fail, Recall retries alone", "half fail, the SDK retries too"],
)
def test_a_flaky_server_gets_every_write_exactly_once(
    fake, recall_config, settings, wb_config, every: int, burst: int, sdk_retries: int
) -> None:
    waits: list[float] = []
    with closing(GmsGraph(fake.url, retries=sdk_retries)) as gms:
        result = scan(gms, recall_config)
        fake.fail_every, fake.fail_burst = every, burst  # from now on, reads and writes fail too
        report = write_back(gms, result, settings, wb_config, T1, sleep=waits.append)

    assert report.ok and waits  # Recall's own retries were needed
    landed = Counter(_key(*entry) for entry in fake.landed)
    assert report.plan is not None and len(report.plan.writes) > 10
    assert landed == Counter(w.key for w in report.plan.writes)  # each planned write once, nothing else
    assert _evidence(report) == {"findings.json", "plan.json", "report.md", "outcome.json"}
    planned = json.loads((report.evidence_dir / "plan.json").read_text())["writes"]
    assert len(planned) == len(report.plan.writes)


def test_what_does_not_land_is_kept_and_sent_by_the_next_scan(fake, gms, recall_config, settings, wb_config) -> None:
    result = scan(gms, recall_config)
    fake.fail_writes = True
    first = write_back(gms, result, settings, wb_config, T1)

    assert not first.ok and len(first.outcome.pending) == len(first.plan.writes)
    assert first.outcome.attempts == wb_config.retry.attempts
    with pytest.raises(ServiceUnreachable) as raised:
        first.raise_for_status()
    assert raised.value.exit_code == EXIT_UNREACHABLE
    store = WritebackStore(settings.state_dir, gms.location)
    events = [w for w in first.plan.writes if w.is_event]
    assert [w.key for w in store.pending()] == [w.key for w in events]  # history waits; state is re-planned
    assert "Pending for the next scan" in (first.evidence_dir / "report.md").read_text()

    fake.fail_writes = False
    second = write_back(gms, result, settings, wb_config, T2)

    assert second.ok and len(second.carried_over) == len(events)
    assert store.pending() == []
    landed = Counter(_key(*entry) for entry in fake.landed)
    assert all(landed[w.key] == 1 for w in events)  # the first scan's run events, once
    assert all(landed[w.key] == 1 for w in second.plan.writes)


def test_a_server_that_stops_answering_exits_3_with_the_evidence_written(
    fake, gms, recall_config, settings, wb_config
) -> None:
    result = scan(gms, recall_config)
    fake.drop_writes = True
    report = write_back(gms, result, settings, wb_config, T1)

    assert report.outcome.unreachable and "did not answer" in report.outcome.unreachable
    assert not report.outcome.landed and fake.landed == []
    assert _evidence(report) == {"findings.json", "plan.json", "report.md", "outcome.json"}
    with pytest.raises(ServiceUnreachable):
        report.raise_for_status()


def _closed_port_url() -> str:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_server_down_before_planning_still_leaves_the_findings(
    tmp_path, recall_config, settings, wb_config
) -> None:
    db = lite_estate(tmp_path / "estate.db", HEALTHY, BREAK)
    with closing(LiteGraph(db)) as lite:
        result = scan(lite, recall_config)
    with closing(GmsGraph(_closed_port_url(), retries=0)) as down:
        report = write_back(down, result, settings, wb_config, T1)

    assert report.plan is None and report.outcome.unreachable
    assert _evidence(report) == {"findings.json", "report.md", "outcome.json"}
    assert json.loads((report.evidence_dir / "findings.json").read_text())["models"][0]["tier"] == "CRITICAL"
    assert "Nothing was planned" in (report.evidence_dir / "report.md").read_text()


def test_incidents_move_to_the_dataset_when_the_server_refuses_models(
    fake, gms, recall_config, settings, wb_config
) -> None:
    fake.refuse_model_incidents = True
    result = scan(gms, recall_config)
    first = write_back(gms, result, settings, wb_config, T1)

    assert first.ok and not first.outcome.refused
    incidents = {u: v for u, v in fake.aspects.items() if "incidentInfo" in v}
    assert len(incidents) == 2
    for stored in incidents.values():
        info = IncidentInfoClass.from_obj(stored["incidentInfo"])
        assert info.entities == [USER_STATS] and "Models affected: engagement_3" in (info.description or "")
    assert WritebackStore(settings.state_dir, gms.location).capability("incident_on_mlModel") is False

    fake.seen.clear()
    second = write_back(gms, result, settings, wb_config, T2)

    assert second.ok
    sent = [p for s in fake.requests_to("POST", "/aspects") for p in s.body["proposals"]]
    assert not any(p["aspectName"] == "incidentInfo" and MODEL in p["aspect"]["value"] for p in sent)


def test_a_write_back_lists_no_entity_type_once_everything_of_recalls_carries_the_managed_tag(
    fake, gms, recall_config, settings, wb_config
) -> None:
    def listed() -> set[str]:
        return {t for s in fake.seen if s.path == "/api/graphql" for t in s.body["variables"]["types"]}

    result = scan(gms, recall_config)
    assert write_back(gms, result, settings, wb_config, T1).ok
    assert listed() >= {"ASSERTION", "INCIDENT", "DOCUMENT"}  # once: there may be an earlier Recall's, untagged
    fake.seen.clear()

    rescanned = scan(gms, recall_config)
    assert listed() == {"MLMODEL", "MLMODEL_GROUP", "ASSERTION"}, (
        "the scan lists models and registered models (to name those with nothing in production) and assertions "
        "(to name the failing ones no model reaches)"
    )
    fake.seen.clear()
    again = write_back(gms, rescanned, settings, wb_config, T2)

    assert again.ok
    assert listed() == set(), "the write-back lists nothing: Recall's own are found by the tag's edges"
