"""Acknowledgements: a finding accepted until a date, shown but not scored, honoured by another instance and
the gate's inputs, and counted again when it expires, its evidence changes, or it is revoked."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner
from scan_closures import HOUR, NOW, closure, ds, feature

from recall_dagster.acks.model import Accepted, Acknowledgement, fingerprint, split
from recall_dagster.cli import cli
from recall_dagster.detect import DetectorState, ownership_vacuum, run_detectors, upstream_staleness
from recall_dagster.detect.finding import Finding, Severity
from recall_dagster.instants import iso_instant
from recall_dagster.results import score_models

USER_STATS = "urn:li:dataset:(urn:li:dataPlatform:bigquery,proj.features.user_stats,PROD)"
TOMORROW = (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat()
AFTER_EXPIRY = (datetime.now(timezone.utc) + timedelta(days=3)).date().isoformat()


def stale_closure(last_updated_ms: int, scanned_at_ms: int = NOW):
    mart = ds("mart", operations_ms=((last_updated_ms, last_updated_ms),))
    return closure(features=[feature("f", "mart")], datasets=[mart], scanned_at_ms=scanned_at_ms)


def stale(config, last_updated_ms: int, scanned_at_ms: int = NOW) -> tuple[object, Finding]:
    c = stale_closure(last_updated_ms, scanned_at_ms)
    [found] = upstream_staleness.detect(c, config, DetectorState())
    return c, found


def accept(found: Finding, model: str | None = None, until_ms: int = NOW + 48 * HOUR) -> Acknowledgement:
    return Acknowledgement.make(found.detector, found.subject, model, [fingerprint(found)], "known outage", "ana",
                                NOW - HOUR, until_ms)


def test_an_acknowledgement_covers_its_finding_while_in_force_and_for_its_model(config):
    c, found = stale(config, NOW - 300 * HOUR)
    ack = accept(found)
    assert ack.covers(found, c, NOW)
    assert not ack.covers(found, c, NOW + 48 * HOUR), "expired"
    assert not ack.covers(found, c, NOW - 2 * HOUR), "--as-of before anyone accepted it"
    assert accept(found, model=c.registered_name).covers(found, c, NOW)
    assert not accept(found, model="other").covers(found, c, NOW)


def versions_without_owner(config) -> list[tuple[object, Finding]]:
    """Versions 1 and 2 of registered model ``m``, neither with an owner: one model-level finding each."""
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,m,PROD)"
    out = []
    for n in (1, 2):
        c = closure(owners=(), version=str(n), groups=(group,))
        c = replace(c, model=replace(c.model, urn=f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_{n},PROD)",
                                     name=f"m_{n}"))
        [found] = [f for f in ownership_vacuum.detect(c, config, DetectorState()) if f.subject == c.urn]
        out.append((c, found))
    return out


def test_a_version_named_as_name_slash_version_is_the_one_covered(config):
    (one, on_one), (two, on_two) = versions_without_owner(config)
    ack = accept(on_one, model="m/1")
    assert ack.covers(on_one, one, NOW), "an acknowledgement for m/1 is honoured on version 1"
    assert not ack.covers(on_two, two, NOW), "and on no other version"
    assert accept(on_one, model=one.urn).covers(on_one, one, NOW), "a version's URN names it too"


def test_a_registered_model_s_acknowledgement_holds_for_the_next_retrain(config):
    (one, on_one), (two, on_two) = versions_without_owner(config)
    whole = Acknowledgement.make(on_one.detector, one.registered_model, "m", [fingerprint(on_one)], "no owners yet",
                                 "ana", NOW - HOUR, NOW + 48 * HOUR)
    assert whole.covers(on_one, one, NOW) and whole.covers(on_two, two, NOW), "every version, later ones too"
    assert not accept(on_one).covers(on_two, two, NOW), "one version's own subject stays that version's"


def test_the_same_outage_growing_older_stays_accepted_and_a_new_one_does_not(config):
    c, found = stale(config, NOW - 300 * HOUR)
    ack = accept(found)
    later_c, later = stale(config, NOW - 300 * HOUR, scanned_at_ms=NOW + 24 * HOUR)
    assert later.evidence["age_hours"] != found.evidence["age_hours"] and ack.covers(later, later_c, NOW + 24 * HOUR)
    again_c, again = stale(config, NOW - 200 * HOUR)  # it refreshed, then stopped again
    assert not ack.covers(again, again_c, NOW)


def test_changed_evidence_is_a_new_finding_for_detectors_without_an_identity() -> None:
    dropped = Finding("training_source_schema_drift", Severity.CRITICAL, "urn:x", "amount dropped",
                      {"path": ["a"], "changes": [{"column": "amount", "change": "dropped"}]})
    other = replace(dropped, evidence={"path": ["b"], "changes": [{"column": "qty", "change": "dropped"}]})
    measured = replace(dropped, evidence={**dropped.evidence, "path": ["z"], "measured": {"verdict": "BLOCK"}})
    assert fingerprint(dropped) == fingerprint(measured), "the walk and the measurement are not the evidence"
    assert fingerprint(dropped) != fingerprint(other)


def test_an_accepted_finding_is_shown_not_scored(config):
    c, found = stale(config, NOW - 300 * HOUR)
    detection = run_detectors([c], config, {})
    [plain] = score_models([c], detection, config, at_ms=NOW)
    [acked] = score_models([c], detection, config, acks=[accept(found)], at_ms=NOW)
    assert plain.score.value > acked.score.value, "the staleness no longer counts"
    assert "upstream_staleness" not in {f.detector for f in acked.findings}
    assert [f for f, _ in acked.accepted] == [found]
    [shown] = [f for f in acked.to_json()["findings"] if f["detector"] == "upstream_staleness"]
    assert shown["acknowledged"] == {"id": accept(found).id, "by": "ana", "reason": "known outage",
                                     "until": "2025-06-03T00:00:00+00:00"}
    assert split(c, [found], [], NOW).open == (found,)


def test_an_accepted_finding_puts_no_dataset_at_risk(config):
    c, found = stale(config, NOW - 300 * HOUR)
    assert found.cause in {b.dataset for b in run_detectors([c], config, {}).blast_radius}
    still_open = run_detectors([c], config, {}, lambda closure, fs: split(closure, fs, [accept(found)], NOW).open)
    assert still_open.blast_radius == () and "blast_radius" not in {f.detector for f in still_open.findings[c.urn]}


@pytest.fixture
def recall(estate, tmp_path, monkeypatch):
    """``recall ...`` on a private copy of the healthy estate, stale at today's date."""
    graph = estate("healthy")
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RECALL_GRAPH", str(graph))
    monkeypatch.setenv("RECALL_USER", "ana")
    monkeypatch.delenv("RECALL_CONFIG", raising=False)

    def run(*args: str, code: int | None = 0) -> tuple[str, object]:
        result = CliRunner().invoke(cli, list(args))
        if code is not None:
            assert result.exit_code == code, result.output
        return result.output, result

    return run


def models(output: str) -> dict:
    return {m["name"]: m for m in json.loads(output)["models"]}


def test_ack_list_scan_expiry_and_revoke_on_the_command_line(recall, tmp_path, monkeypatch):
    def staleness(model: dict) -> dict:
        [found] = [f for f in model["findings"] if f["detector"] == "upstream_staleness" and f["subject"] == USER_STATS]
        return found

    before = models(recall("scan", "--json")[0])["engagement_3"]
    assert staleness(before)["acknowledged"] is None and before["score"] > 0

    out, _ = recall("ack", "upstream_staleness", "features.user_stats", "--reason", "the export moves on Monday",
                    "--until", TOMORROW, "--json")
    made = json.loads(out)
    assert (made["subject"], made["by"], made["model"], made["writes"]) == (USER_STATS, "ana", None, 1)

    now = models(recall("scan", "--json")[0])["engagement_3"]
    shown = staleness(now)
    assert shown["acknowledged"]["by"] == "ana" and shown["acknowledged"]["reason"] == "the export moves on Monday"
    assert shown["acknowledged"]["until"].startswith(
        (datetime.fromisoformat(TOMORROW) + timedelta(days=1)).date().isoformat())
    assert now["score"] < before["score"], "left out of the score"
    others = [f for f in now["findings"] if f["detector"] == "upstream_staleness" and f["subject"] != USER_STATS]
    assert others and all(f["acknowledged"] is None for f in others), "only the finding accepted"
    text, _ = recall("scan")
    assert "Acknowledged, not scored (1)" in text and "the export moves on Monday" in text

    expired = models(recall("scan", "--json", "--as-of", AFTER_EXPIRY)[0])["engagement_3"]
    assert staleness(expired)["acknowledged"] is None and expired["score"] == before["score"]

    listed = json.loads(recall("ack", "list", "--json")[0])
    assert [(a["id"], a["in_force"]) for a in listed] == [(made["id"], True)]

    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "elsewhere"))  # another instance, the same graph
    elsewhere = models(recall("scan", "--json")[0])["engagement_3"]
    assert staleness(elsewhere)["acknowledged"]["id"] == made["id"], "the published document is honoured"

    out, _ = recall("ack", "revoke", made["id"])
    assert f"revoked {made['id']}" in out
    assert staleness(models(recall("scan", "--json")[0])["engagement_3"])["acknowledged"] is None
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    assert staleness(models(recall("scan", "--json")[0])["engagement_3"])["acknowledged"] is None, (
        "revoked elsewhere: the copy kept here is not honoured")


def test_what_cannot_be_acknowledged_is_a_usage_error_that_says_why(recall):
    _, result = recall("ack", "upstream_staleness", "raw.nowhere", "--reason", "x", "--until", TOMORROW, code=2)
    assert "no current upstream_staleness finding on raw.nowhere; it is on: proj.features.user_stats" in " ".join(
        result.output.split())
    _, result = recall("ack", "pii_exposure", "features.user_stats", "--reason", "x", "--until", TOMORROW, code=2)
    assert "pii_exposure finds nothing now" in result.output
    _, result = recall("ack", "upstream_staleness", "features.user_stats", "--reason", "x", "--until", "2020-01-01",
                       code=2)
    assert "--until must lie in the future" in result.output
    _, result = recall("ack", "upstream_staleness", "features.user_stats", "--reason", "x", "--until", "Friday",
                       code=2)
    assert "is not an ISO-8601 date" in result.output
    _, result = recall("ack", "revoke", "nope", code=2)
    assert "no acknowledgement 'nope'; known: none" in result.output


YEAR_10000_MS = 253_402_300_800_000  # 10000-01-01T00:00:00Z: one millisecond past what a datetime holds


def test_an_until_past_the_calendar_is_refused_before_anything_is_kept(tmp_path, monkeypatch):
    """`--until 9999-12-31` runs through that day into year 10000: refused with exit 2, and no acknowledgement
    saved that every later command would then trip on."""
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    done = CliRunner().invoke(cli, ["ack", "upstream_staleness", USER_STATS, "--reason", "forever",
                                    "--until", "9999-12-31", "--graph", str(tmp_path / "graph.db")])
    assert done.exit_code == 2 and "past the end of the calendar" in done.output, done.output
    assert not list((tmp_path / "home").rglob("acknowledgements.json"))


def test_an_acknowledgement_carrying_an_instant_outside_the_calendar_is_not_one(config):
    """One a document in the graph carries is skipped (`read_published` reads past a ValueError); printing such
    an instant never fails."""
    c, found = stale(config, NOW - 300 * HOUR)
    record = accept(found).to_json()
    with pytest.raises(ValueError, match="outside the calendar"):
        Acknowledgement.from_json({**record, "until_ms": YEAR_10000_MS})
    with pytest.raises(ValueError):
        Acknowledgement.from_json({**record, "created_ms": 10**30})
    assert iso_instant(YEAR_10000_MS).startswith(f"{YEAR_10000_MS} ms")
    assert Accepted("a", "ana", "r", YEAR_10000_MS).to_json()["until"].startswith(str(YEAR_10000_MS))
