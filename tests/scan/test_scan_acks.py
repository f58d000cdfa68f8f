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
from recall_dagster.detect import DetectorState, ownership_vacuum, upstream_staleness
from recall_dagster.scan import judged
from recall_dagster.detect.finding import Finding, Severity
from recall_dagster.instants import iso_instant
from recall_dagster.results import score_models
from tests.contracts.conform import conforms

USER_STATS = "urn:li:dataset:(urn:li:dataPlatform:bigquery,proj.features.user_stats,PROD)"
TOMORROW = (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat()
AFTER_EXPIRY = (datetime.now(timezone.utc) + timedelta(days=3)).date().isoformat()
SHARED_KEY = "a secret every instance on the graph is given"


def stale_closure(last_updated_ms: int):
    mart = ds("mart", operations_ms=((last_updated_ms, last_updated_ms),))
    return closure(features=[feature("f", "mart")], datasets=[mart])


def stale(config, last_updated_ms: int, at_ms: int = NOW) -> tuple[object, Finding]:
    c = stale_closure(last_updated_ms)
    [found] = upstream_staleness.detect(c, config, DetectorState(at_ms=at_ms))
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
        [found] = [f for f in ownership_vacuum.detect(c, config, DetectorState(at_ms=NOW)) if f.subject == c.urn]
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
    later_c, later = stale(config, NOW - 300 * HOUR, at_ms=NOW + 24 * HOUR)
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
    detection = judged([c], config, {}, at_ms=NOW)
    [plain] = score_models([c], detection, config, at_ms=NOW)
    [acked] = score_models([c], detection, config, acks=[accept(found)], at_ms=NOW)
    assert plain.score.value > acked.score.value, "the staleness no longer counts"
    assert "upstream_staleness" not in {f.detector for f in acked.findings}
    assert [f for f, _ in acked.accepted] == [found]
    [shown] = [f for f in acked.contract().as_json()["findings"] if f["detector"] == "upstream_staleness"]
    assert shown["acknowledged"] == {"id": accept(found).id, "by": "ana", "reason": "known outage",
                                     "until": "2025-06-03T00:00:00+00:00"}
    assert split(c, [found], [], NOW).open == (found,)


def test_an_accepted_finding_puts_no_dataset_at_risk(config):
    c, found = stale(config, NOW - 300 * HOUR)
    assert found.cause in {b.dataset for b in judged([c], config, {}, at_ms=NOW).blast_radius}
    still_open = judged([c], config, {}, acks=[accept(found)], at_ms=NOW)
    assert still_open.blast_radius == () and "blast_radius" not in {f.detector for f in still_open.findings[c.urn]}


@pytest.fixture
def recall(estate, tmp_path, monkeypatch):
    """``recall ...`` on a private copy of the healthy estate, stale at today's date."""
    graph = estate("healthy")
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RECALL_GRAPH", str(graph))
    monkeypatch.setenv("RECALL_USER", "ana")
    monkeypatch.delenv("RECALL_CONFIG", raising=False)
    monkeypatch.delenv("RECALL_ACK_KEY", raising=False)

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
    monkeypatch.setenv("RECALL_ACK_KEY", SHARED_KEY)  # what every instance on one graph shares

    out, _ = recall("ack", "upstream_staleness", "features.user_stats", "--reason", "the export moves on Monday",
                    "--until", TOMORROW, "--json")
    made = json.loads(out)
    conforms("ack", made)
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
    conforms("ack-list", listed)
    assert [(a["id"], a["in_force"], a["ignored"]) for a in listed["acknowledgements"]] == [(made["id"], True, None)]

    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "elsewhere"))  # another instance, the same graph
    monkeypatch.delenv("RECALL_ACK_KEY")  # not given the shared key: its own home's
    alone_out = recall("scan", "--json")[0]
    alone = json.loads(alone_out)
    assert staleness(models(alone_out)["engagement_3"])["acknowledged"] is None, "signed with another home's key"
    [ignored] = alone["ignored_acknowledgements"]
    assert ignored["id"] == made["id"] and "set RECALL_ACK_KEY alike on every instance" in ignored["why"]
    monkeypatch.setenv("RECALL_ACK_KEY", SHARED_KEY)  # given it
    shared_out = recall("scan", "--json")[0]
    shared = json.loads(shared_out)
    assert staleness(models(shared_out)["engagement_3"])["acknowledged"]["id"] == made["id"], "honoured elsewhere"
    assert shared["ignored_acknowledgements"] == []

    out, _ = recall("ack", "revoke", made["id"])
    assert f"revoked {made['id']}" in out
    assert staleness(models(recall("scan", "--json")[0])["engagement_3"])["acknowledged"] is None
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RECALL_ACK_KEY")
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
    assert Accepted("a", "ana", "r", YEAR_10000_MS).contract().until.startswith(str(YEAR_10000_MS))


def _forge(graph_path: str, ack: Acknowledgement, *, author: str, signature: str | None = None) -> None:
    """A document an acknowledgement's record, published to the graph by ``author`` (not through Recall)."""
    from datahub.emitter.mcp import MetadataChangeProposalWrapper
    from datahub.metadata.schema_classes import (
        AuditStampClass,
        DocumentContentsClass,
        DocumentInfoClass,
        DocumentStateClass,
        DocumentStatusClass,
    )

    from recall_dagster.acks.store import MARK, RECORD_KEY, SIGNATURE_KEY, document_urn
    from recall_dagster.cli.options import opened_graph
    from recall_dagster.estate.marks import MANAGED_BY_KEY
    from recall_dagster.settings import Settings

    stamp = AuditStampClass(time=NOW, actor=author)
    props = {MANAGED_BY_KEY: MARK, RECORD_KEY: json.dumps(ack.to_json()), **({SIGNATURE_KEY: signature} if signature
                                                                             else {})}
    info = DocumentInfoClass(contents=DocumentContentsClass(text="accepted"), created=stamp, lastModified=stamp,
                             customProperties=props, title="Acknowledged",
                             status=DocumentStatusClass(state=DocumentStateClass.PUBLISHED))
    with opened_graph(replace(Settings.from_env(), graph=graph_path), read_only=False) as graph:
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=document_urn(ack.id), aspect=info)])


def _current_staleness(recall) -> tuple[dict, int]:
    """The scan's answer on engagement_3's stale user_stats, and its exit code."""
    out, result = recall("scan", "--json", code=None)
    [found] = [f for f in models(out)["engagement_3"]["findings"]
               if f["detector"] == "upstream_staleness" and f["subject"] == USER_STATS]
    return found, result.exit_code


def test_a_forged_acknowledgement_in_the_graph_silences_nothing_and_is_listed(recall, estate, monkeypatch):
    """Anyone who can publish a document could write `recall-ack-*`: unsigned, or signed with a key not
    Recall's, it covers no finding, the scan's exit code stays, and the scan and `ack list` say why."""
    graph = str(estate("healthy"))
    monkeypatch.setenv("RECALL_GRAPH", graph)
    found, code = _current_staleness(recall)
    assert found["acknowledged"] is None
    fingerprints = [_fingerprint_of(found)]
    created = int(datetime.now(timezone.utc).timestamp() * 1000) - HOUR
    unsigned = Acknowledgement.make("upstream_staleness", USER_STATS, None, fingerprints, "trust me", "ana",
                                    created, created + 10 * 24 * HOUR)
    _forge(graph, unsigned, author="urn:li:corpuser:mallory")
    wrong_key = replace(unsigned, id="f0f0f0f0f0f0")
    _forge(graph, wrong_key, author="urn:li:corpuser:recall", signature="0" * 64)

    after, after_code = _current_staleness(recall)
    assert after["acknowledged"] is None and after_code == code, "the finding still counts, the exit is the same"
    out, _ = recall("scan", "--json", code=None)
    why = {i["id"]: i["why"] for i in json.loads(out)["ignored_acknowledgements"]}
    assert "no signature of Recall's, and its author urn:li:corpuser:mallory is not in " \
           "acknowledgements.trusted_authors" in why[unsigned.id]
    assert "signature does not match this instance's key" in why[wrong_key.id]
    text, _ = recall("scan", code=None)
    assert "Acknowledgements ignored (2)" in text and "mallory" in text
    listed = {a["id"]: a for a in json.loads(recall("ack", "list", "--json")[0])["acknowledgements"]}
    assert not listed[unsigned.id]["in_force"] and "mallory" in listed[unsigned.id]["ignored"]


def test_a_trusted_author_s_document_counts(recall, estate, monkeypatch, tmp_path):
    """`acknowledgements.trusted_authors` names the DataHub users whose documents count unsigned, as a bare
    user name or a URN."""
    graph = str(estate("healthy"))
    monkeypatch.setenv("RECALL_GRAPH", graph)
    found, _ = _current_staleness(recall)
    created = int(datetime.now(timezone.utc).timestamp() * 1000) - HOUR
    ack = Acknowledgement.make("upstream_staleness", USER_STATS, None, [_fingerprint_of(found)], "ok by data eng",
                               "bea", created, created + 10 * 24 * HOUR)
    _forge(graph, ack, author="urn:li:corpuser:bea")
    config = tmp_path / "trust.yaml"
    config.write_text("acknowledgements:\n  trusted_authors: [bea]\n")
    monkeypatch.setenv("RECALL_CONFIG", str(config))
    after, _ = _current_staleness(recall)
    assert after["acknowledged"]["id"] == ack.id and after["acknowledged"]["by"] == "bea"


def test_an_acknowledgement_longer_than_the_config_allows_is_refused_or_ignored(recall, tmp_path, monkeypatch):
    """`--until` past `acknowledgements.max_days` exits 2 before anything is kept; one kept that lasts longer
    (the limit lowered since, or the file edited) is ignored and listed."""
    far = (datetime.now(timezone.utc) + timedelta(days=120)).date().isoformat()
    _, result = recall("ack", "upstream_staleness", "features.user_stats", "--reason", "x", "--until", far, code=2)
    assert "more than 90 days ahead, longer than acknowledgements.max_days allows" in result.output
    assert not list((tmp_path / "home").rglob("acknowledgements.json")), "nothing kept"

    out, _ = recall("ack", "upstream_staleness", "features.user_stats", "--reason", "x", "--until", TOMORROW,
                    "--json", "--no-write")
    made = json.loads(out)
    config = tmp_path / "short.yaml"
    config.write_text("acknowledgements:\n  max_days: 1\n")
    monkeypatch.setenv("RECALL_CONFIG", str(config))
    found, _ = _current_staleness(recall)
    assert found["acknowledged"] is None
    [ignored] = json.loads(recall("scan", "--json", code=None)[0])["ignored_acknowledgements"]
    assert ignored["id"] == made["id"] and "longer than acknowledgements.max_days (1)" in ignored["why"]


def _fingerprint_of(shown: dict) -> str:
    """The fingerprint a finding as `scan --json` shows it has."""
    return fingerprint(Finding(shown["detector"], Severity(shown["severity"]), shown["subject"], shown["message"],
                               shown["evidence"], shown["cause"]))


def test_no_as_of_date_crashes_a_scan(recall):
    """The last instant of the calendar scans (freshness judged there: every table stale), one past it is a
    usage error; neither is a traceback."""
    out, result = recall("scan", "--json", "--as-of", "9999-12-31T23:59:59Z", code=None)
    assert result.exit_code in (0, 1, 4), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), "an answer, not a traceback"
    assert json.loads(out)["scanned_at"].startswith("9999-12-31T23:59:59")
    _, result = recall("scan", "--as-of", "10000-01-01", code=2)
    assert "is not an ISO-8601 date or time" in result.output
