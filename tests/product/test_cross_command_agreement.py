"""One question, one answer: every command says the same about the same estate.

Hypothesis draws small, well-formed estates in the shapes stock DataHub sources write them
(:mod:`tests.product.agreement_estates`), writes each to a real DataHub Lite file and runs the real CLI on it
with ``--json``, as a team would. Three questions are asked of every command that answers them:

1. Which version is in production: ``scan --all`` (``"production": true``), ``scan`` (what it scans) and
   ``gate fraud`` (the version it judges, ``"model"``).
2. Is each training input fresh: an ``upstream_staleness`` finding on the judged version in the scan, and the
   gate's ``input_freshness`` check (SKIP exactly when nobody records when an input changed).
3. Which model versions a failing test reaches, and how strongly (confirmed through column lineage, through
   table lineage, or only a suspect): ``failing_assertion`` findings in ``scan --all`` (their ``reach``), the
   gate's ``failing_assertions`` check (FAIL for a confirmed or table reach, WARN for a suspect), the models of
   the incidents ``incidents sync`` keeps open and the blast radius of the active causes of ``blind-window``
   (each model's ``reach``), and ``impact`` on the failing column (production versions only; it needs no MLflow
   model to name them, each result INCOMPLETE; a suspect shares only an origin, so a change to the column does
   not reach it).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, example, given, settings

from recall_dagster.cli import cli
from recall_dagster.clock import clock_ms
from recall_dagster.graph import LiteGraph
from recall_dagster.instants import iso_instant
from tests.product.agreement_estates import (
    FEAT_PG,
    RAW_DBT,
    STG_DBT,
    TABLE_OF,
    DbtTest,
    Estate,
    Version,
    estates,
    version_urn,
)

EXAMPLES = 25  # per test, beside the explicit examples; a fifth of a second (scan, gate) to a third (five commands) each
# No shrinking: a failing estate is printed whole (Estate.describe), and shrinking one costs minutes of commands.
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    phases=(Phase.explicit, Phase.generate),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# The disagreements this test found, as the smallest estates showing them: each is an explicit example.
_ONE_VERSION = (Version(1, ("production",), None, 480, (FEAT_PG,)),)


def _tested(keeps_note: bool, test: DbtTest) -> Estate:
    return Estate(_ONE_VERSION, None, keeps_note, (), (test,), {})


# dbt's test passed 2 h ago and fails in a run stamped 3 h from now (a runner's clock ahead of ours)
FAILS_AFTER_NOW = _tested(True, DbtTest(STG_DBT, "amount", ((-3, "FAILURE"), (2, "SUCCESS"))))
# ... and the converse: failing 2 h ago, passing in a run stamped 3 h from now
PASSES_AFTER_NOW = _tested(True, DbtTest(STG_DBT, "amount", ((-3, "SUCCESS"), (2, "FAILURE"))))
# a failing test on raw.payments.note, a column staging drops: no training column derives from it
FAILS_ON_A_DROPPED_COLUMN = _tested(False, DbtTest(RAW_DBT, "note", ((2, "FAILURE"),)))
# an hour ago the test failed and the training table was written: as of 90 minutes ago it passed, and the
# table's last change was 30 h old, past the 24 h window it is given
CHANGED_AN_HOUR_AGO = Estate(_ONE_VERSION, None, True, ((FEAT_PG, "lastModified", 30), (FEAT_PG, "operation", 1)),
                             (DbtTest(STG_DBT, "amount", ((1, "FAILURE"), (5, "SUCCESS"))),),
                             {"*marts.fraud_features": 24})


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("agreement")


@dataclass
class Shop:
    """One drawn estate on a Lite file, and the recall commands run on it."""

    estate: Estate
    env: dict[str, str]
    said: dict[str, Any]
    written_at_ms: int  # the "now" the estate's ages count back from

    def run(self, *args: str) -> Any:
        """``recall ARGS --json``: its JSON answer (failing the test on a crash or a non-JSON answer)."""
        command = " ".join(args)
        result = CliRunner().invoke(cli, [*args, "--json"], env=self.env)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"recall {command} crashed on\n{self.estate.describe()}") from result.exception
        assert result.exit_code in (0, 1, 4), (
            f"recall {command} exited {result.exit_code}: {result.output}\n{self.estate.describe()}")
        self.said[command] = answer = json.loads(result.stdout)
        return answer

    def fail(self, message: str, *commands: str) -> str:
        """A disagreement's message: what differs, the estate, and the commands' answers."""
        shown = "\n".join(f"--- recall {c} --json:\n{json.dumps(_brief(c, self.said[c]), indent=1)}"
                          for c in commands if c in self.said)
        return f"{message}\n--- estate:\n{self.estate.describe()}\n{shown}"


def shop(estate: Estate, workdir: Path) -> Shop:
    graph_path, overlay = workdir / "graph.db", workdir / "recall.yaml"
    overlay.write_text(yaml.safe_dump(estate.overlay()))
    graph, now_ms = LiteGraph(str(graph_path)), clock_ms()
    try:
        graph.emit_mcps(estate.mcps(now_ms)).raise_if_failed("estate")
    finally:
        graph.close()
    env = {"RECALL_HOME": str(workdir / "home"), "RECALL_GRAPH": str(graph_path), "RECALL_CONFIG": str(overlay),
           "MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'no-mlflow.db'}"}
    return Shop(estate, env, {}, now_ms)


def _brief(command: str, answer: Any) -> Any:
    """The part of an answer a disagreement is about, so the message stays readable."""
    if command.startswith("scan"):
        return [{"urn": m["urn"], "production": m["production"],
                 "findings": [f"{f['detector']}: {f['message']}" for f in m["findings"]
                              if f["detector"] in ("upstream_staleness", "failing_assertion")]}
                for m in answer["models"]]
    if command.startswith("gate"):
        return {"model": answer["model"], "verdict": answer["verdict"],
                "checks": [c for c in answer["checks"] if c["name"] in ("input_freshness", "failing_assertions")]}
    if command.startswith("blind-window"):
        return [{"active": c["active"], "failing": [a["name"] for a in c["assertions"] if a["failing"]],
                 "models": [(m["urn"], m["reach"]) for m in c["blast_radius"]["models"]]} for c in answer["causes"]]
    if command.startswith("incidents"):
        return [{"tests": i["tests"], "models": [(m["name"], m["reach"]) for m in i["models"]]}
                for i in answer["active"]]
    if command.startswith("impact"):
        return {"verdict": answer["verdict"], "models": [r["model_urn"] for r in answer["results"]]}
    return answer


def _check(gate: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in gate["checks"] if c["name"] == name)


def _report(scan: dict[str, Any], urn: str) -> dict[str, Any]:
    return next(m for m in scan["models"] if m["urn"] == urn)


def _findings(report: dict[str, Any], detector: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["detector"] == detector]


def _sorted(urns: Iterable[str]) -> list[str]:
    return sorted(set(urns))


def _each_estate(scratch: Path, estate: Estate) -> tuple[Shop, tempfile.TemporaryDirectory[str]]:
    workdir = tempfile.TemporaryDirectory(dir=scratch)
    return shop(estate, Path(workdir.name)), workdir


# -- 1. which version is in production ---------------------------------------------------------------------


@SETTINGS
@given(estate=estates())
def test_every_command_names_the_same_production_version(scratch: Path, estate: Estate) -> None:
    """scan scans exactly the versions scan --all marks production; gate judges one of them (the newest version
    when none is)."""
    s, workdir = _each_estate(scratch, estate)
    with workdir:
        every, production, gate = s.run("scan", "--all"), s.run("scan"), s.run("gate", "fraud")
    marked = _sorted(m["urn"] for m in every["models"] if m["production"])
    assert _sorted(m["urn"] for m in every["models"]) == _sorted(v.urn for v in estate.versions), s.fail(
        "scan --all does not scan every version", "scan --all")
    assert _sorted(m["urn"] for m in production["models"]) == marked, s.fail(
        "scan scans other versions than those scan --all marks production", "scan --all", "scan")
    assert all(m["production"] for m in production["models"]), s.fail(
        "scan scans a version it does not call production", "scan")
    if marked:
        assert gate["model"] in marked, s.fail(
            f"gate judges {gate['model']}, which scan --all does not mark production ({marked})",
            "scan --all", "gate fraud")
    else:
        newest = max(estate.versions, key=lambda v: v.number)
        assert gate["model"] == newest.urn, s.fail(
            f"nothing is production, yet gate judges {gate['model']}, not the newest version {newest.urn}",
            "scan --all", "gate fraud")


# -- 2. is each training input fresh -------------------------------------------------------------------------


@SETTINGS
@given(estate=estates())
def test_the_scan_and_the_gate_agree_on_which_training_input_is_stale(scratch: Path, estate: Estate) -> None:
    """A training input of the version gate judges is stale in the scan of that version (an upstream_staleness
    finding on any description of its table) exactly when gate's input_freshness FAILs naming it."""
    s, workdir = _each_estate(scratch, estate)
    with workdir:
        every, production, gate = s.run("scan", "--all"), s.run("scan"), s.run("gate", "fraud")
    judged = gate["model"]
    scan, command = (production, "scan") if any(m["urn"] == judged for m in production["models"]) else (
        every, "scan --all")
    _stale_inputs_agree(s, scan, command, gate, "gate fraud")


def _stale_inputs_agree(s: Shop, scan: dict[str, Any], command: str, gate: dict[str, Any], gate_command: str,
                        hours_ago: float = 0) -> None:
    """The scan and the gate, both asked ``hours_ago``, name the same stale training inputs of the version the
    gate judges, and the gate skips exactly when nothing recorded a change of an input by then."""
    judged = gate["model"]
    version = next(v for v in s.estate.versions if v.urn == judged)
    inputs = {TABLE_OF[u] for u in version.reads}
    findings = _findings(_report(scan, judged), "upstream_staleness")
    stale_tables = {TABLE_OF.get(f["subject"], f["subject"]) for f in findings}
    scan_stale = sorted(stale_tables & inputs)
    check = _check(gate, "input_freshness")
    gate_stale = sorted(line.split(" last changed ")[0].removeprefix("shop.") for line in check["details"]
                        if check["status"] == "FAIL" and " last changed " in line and ", past its " in line)
    assert (check["status"] == "FAIL") == bool(scan_stale), s.fail(
        f"{command} finds the training inputs {scan_stale} of {judged} stale; gate's input_freshness is "
        f"{check['status']}", command, gate_command)
    assert gate_stale == scan_stale, s.fail(
        f"{command} finds {scan_stale} stale; gate's input_freshness names {gate_stale}", command, gate_command)
    recorded = {TABLE_OF[urn] for urn, _, age in s.estate.freshness if age >= hours_ago}
    assert (check["status"] == "SKIP") == (not inputs & recorded), s.fail(
        f"input_freshness is {check['status']} while the estate records a change of "
        f"{sorted(inputs & recorded) or 'no input'} (of {sorted(inputs)})", gate_command)


# -- 3. which model versions a failing test reaches ----------------------------------------------------------


STRENGTH = {"suspect": 1, "table": 2, "confirmed": 3}  # a version reached by several tests: the strongest reach


def _strongest(pairs: Iterable[tuple[str, str | None]]) -> dict[str, str]:
    """Version URN -> the strongest reach among ``(urn, reach)``; a finding with no reach (a frozen table only)
    names no strength."""
    found: dict[str, str] = {}
    for urn, reach in pairs:
        if reach is not None and STRENGTH[reach] > STRENGTH.get(found.get(urn, ""), 0):
            found[urn] = reach
    return found


def _urn_of(name: str) -> str:
    """A version's name (``fraud_2``) as incidents name it -> its URN."""
    return version_urn(int(name.rsplit("_", 1)[1]))


@SETTINGS
@example(estate=FAILS_AFTER_NOW)
@example(estate=PASSES_AFTER_NOW)
@example(estate=FAILS_ON_A_DROPPED_COLUMN)
@given(estate=estates())
def test_every_command_sends_a_failing_test_to_the_same_model_versions(scratch: Path, estate: Estate) -> None:
    """The versions with a failing_assertion finding in scan --all are the versions gate's failing_assertions,
    the open incidents, blind-window's active causes and (of the production ones) impact on the failing column
    reach. Two shapes split them before: a run stamped after now (the gate and the lifecycle read the newest
    run, future or not), and a failing column staging drops (the scan and the gate counted every test on an
    upstream table, the lifecycle and impact followed column lineage); one reach rule now serves them all."""
    _reach_agrees(scratch, estate)


def _reach_agrees(scratch: Path, estate: Estate) -> None:
    s, workdir = _each_estate(scratch, estate)
    with workdir:
        every, gate = s.run("scan", "--all"), s.run("gate", "fraud")
        window, synced = s.run("blind-window"), s.run("incidents", "sync")
        failing = {(f["evidence"]["dataset"], f["evidence"]["column"])
                   for m in every["models"] for f in _findings(m, "failing_assertion")}
        impacts = [s.run("impact", dataset, "--column", column, "--mutation", "null_fraction", "--no-write")
                   for dataset, column in sorted(failing)]
    scan_reach = _sorted(m["urn"] for m in every["models"] if _findings(m, "failing_assertion"))
    production = {m["urn"] for m in every["models"] if m["production"]}
    scan_strength = _strongest((m["urn"], f["evidence"]["reach"])
                               for m in every["models"] for f in _findings(m, "failing_assertion"))

    check = _check(gate, "failing_assertions")
    loud = scan_strength.get(gate["model"]) in ("confirmed", "table")
    assert (check["status"] == "FAIL") == loud, s.fail(
        f"scan --all reaches {gate['model']} as {scan_strength.get(gate['model'])}; gate's failing_assertions "
        f"on it is {check['status']}", "scan --all", "gate fraud")
    assert check["status"] != "WARN" or gate["model"] in scan_reach, s.fail(
        f"gate's failing_assertions warns on {gate['model']}, which scan --all finds no failing test on",
        "scan --all", "gate fraud")
    incident_reach = _sorted(_urn_of(m["name"]) for i in synced["active"] for m in i["models"])
    assert incident_reach == scan_reach, s.fail(
        f"scan --all reports failing tests on {scan_reach}; incidents sync keeps incidents open on "
        f"{incident_reach}", "scan --all", "incidents sync")
    window_reach = _sorted(m["urn"] for c in window["causes"] if c["active"] for m in c["blast_radius"]["models"])
    assert window_reach == scan_reach, s.fail(
        f"scan --all reports failing tests on {scan_reach}; blind-window's active causes reach {window_reach}",
        "scan --all", "blind-window")
    incident_strength = _strongest((_urn_of(m["name"]), m["reach"]) for i in synced["active"] for m in i["models"])
    assert incident_strength == scan_strength, s.fail(
        f"scan --all reaches {scan_strength}; incidents sync reaches {incident_strength}", "scan --all",
        "incidents sync")
    window_strength = _strongest((m["urn"], m["reach"]) for c in window["causes"] if c["active"]
                                 for m in c["blast_radius"]["models"])
    assert window_strength == scan_strength, s.fail(
        f"scan --all reaches {scan_strength}; blind-window's active causes reach {window_strength}",
        "scan --all", "blind-window")
    impact_reach = _sorted(r["model_urn"] for i in impacts for r in i["results"])
    changed = {urn for urn, reach in scan_strength.items() if reach != "suspect"}
    assert impact_reach == _sorted(production & changed), s.fail(
        f"scan --all reaches the production versions {_sorted(production & changed)} beyond a suspect; "
        f"impact on the failing columns {sorted(failing)} reaches {impact_reach}",
        "scan --all", *(c for c in s.said if c.startswith("impact")))



@SETTINGS
@example(estate=CHANGED_AN_HOUR_AGO)
@example(estate=FAILS_AFTER_NOW)
@example(estate=PASSES_AFTER_NOW)
@given(estate=estates())
def test_as_of_an_earlier_instant_every_command_answers_as_of_it(scratch: Path, estate: Estate) -> None:
    """``--as-of`` an hour and a half ago: scan --all, gate and blind-window read the tests and the freshness
    as they stood then, so they agree on the versions a failing test reached and on what was stale then."""
    s, workdir = _each_estate(scratch, estate)
    at = ["--as-of", iso_instant(s.written_at_ms - 90 * 60_000)]
    with workdir:
        every, gate, window = s.run("scan", "--all", *at), s.run("gate", "fraud", *at), s.run("blind-window", *at)
    scan_reach = _sorted(m["urn"] for m in every["models"] if _findings(m, "failing_assertion"))
    check = _check(gate, "failing_assertions")
    assert (check["status"] == "FAIL") == (gate["model"] in scan_reach), s.fail(
        f"as of {at[1]}, scan --all reports failing tests on {scan_reach}; gate's failing_assertions on "
        f"{gate['model']} is {check['status']}", f"scan --all {' '.join(at)}", f"gate fraud {' '.join(at)}")
    window_reach = _sorted(m["urn"] for c in window["causes"] if c["active"] for m in c["blast_radius"]["models"])
    assert window_reach == scan_reach, s.fail(
        f"as of {at[1]}, scan --all reports failing tests on {scan_reach}; blind-window's active causes reach "
        f"{window_reach}", f"scan --all {' '.join(at)}", f"blind-window {' '.join(at)}")
    _stale_inputs_agree(s, every, f"scan --all {' '.join(at)}", gate, f"gate fraud {' '.join(at)}", hours_ago=1.5)
