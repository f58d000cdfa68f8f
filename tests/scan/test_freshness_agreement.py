"""Whether a table is fresh has one answer: the scan's detector, the retrain gate and protect give the same.

A table is described several times (a dbt node, its warehouse table, the mlflow
source's reference to it). Each command used to judge a description its own way:
the scan each description alone, the gate the newest record of the named table,
protect the strictest window of its twins, so the scan called a table "last
changed 10.0 days ago" that the gate called "within its freshness window".
"""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from scan_closures import HOUR, NOW, closure, ds, run, urn

from recall_dagster.detect import DetectorState, upstream_staleness
from recall_dagster.estate import ModelClosure
from recall_dagster.config.load import load, DEFAULT_CONFIG
from tests.configured import configured
from recall_dagster.lifecycle.retrain_gate import GateInputs, input_freshness
from recall_dagster.protect.assess import reliability

SHIPPED = yaml.safe_load(DEFAULT_CONFIG.read_text())
LIFECYCLE = load().lifecycle
PROTECT = load().protect
# The table's descriptions, canonical first: the dbt node, its warehouse table, a reference to that table.
TWINS = ("node", "wh", "ref")


def estate(evidence: dict[str, int | None], windows: dict[str, float]) -> tuple[ModelClosure, object]:
    """One model trained on the warehouse table (as the mlflow source references it); ``evidence`` gives each description's last change (hours
    before now, by a build, lastModified or an operation), ``windows`` the windows a team set per name."""
    kinds = ("builds_ms", "last_modified_ms", "operations_ms")
    views = []
    for i, name in enumerate(TWINS):
        hours = evidence.get(name)
        extra = {}
        if hours is not None:
            ms = NOW - hours * HOUR
            extra = {kinds[i]: {"builds_ms": (ms,), "last_modified_ms": ms, "operations_ms": ((ms, ms),)}[kinds[i]]}
        copied = {"wh": "node", "ref": "wh"}.get(name)
        views.append(ds(name, copied, copy_of=urn(copied), **extra) if copied else ds(name, **extra))
    config = configured({"freshness": {"windows": {f"db.{n}": h for n, h in windows.items()}}}, "t").scan
    return closure(runs=[run("r", "ref")], datasets=views), config


def scan_says(c: ModelClosure, config) -> bool | None:
    found = upstream_staleness.detect(c, config, DetectorState(at_ms=NOW))
    return bool(found)


def gate_says(c: ModelClosure, config) -> str:
    inputs = GateInputs(closure=c, findings=(), causes=(), open_incidents=(), span=None, current_rows={},
                        unmeasured_rows={}, columns=c.columns, scan=config, config=LIFECYCLE, now_ms=NOW)
    return input_freshness(inputs).status


def protect_says(c: ModelClosure, config) -> tuple[float, str]:
    (table,) = [r for r in reliability([c], c.columns, (), config, PROTECT, NOW) if r.dataset == urn("node")]
    fresh = next(x for x in table.components if x.name == "freshness")
    return fresh.value, fresh.why


def test_a_fresh_build_of_the_dbt_node_makes_its_warehouse_table_fresh_for_every_command():
    """The reproduction: the warehouse table's own lastModified is 10 days old, its dbt node was built an
    hour ago. The scan reported "last changed 10.0 days ago" while the gate passed the same table."""
    c, config = estate({"node": 1, "wh": 240}, {})
    assert not scan_says(c, config), "a build writes the warehouse table: it changed an hour ago"
    assert gate_says(c, config) == "PASS"
    assert protect_says(c, config)[0] == 1.0


def test_a_window_set_on_one_name_holds_the_table_for_every_command():
    """A team sets 24 h on the warehouse table; the dbt node (default window) was last built 30 h ago."""
    c, config = estate({"node": 30}, {"wh": 24})
    (stale,) = upstream_staleness.detect(c, config, DetectorState(at_ms=NOW))
    assert stale.subject == urn("node") and stale.evidence["window_hours"] == 24
    assert "30.0 hours ago, past its 24.0 hours window (per its build)" in stale.message
    assert gate_says(c, config) == "FAIL"
    assert protect_says(c, config) == (0.0, "changed 30 h ago, past its 24 h window")


def test_a_finding_on_a_twin_says_whose_record_made_it_stale():
    c, config = estate({"node": 300, "wh": 400}, {})
    found = {f.subject: f for f in upstream_staleness.detect(c, config, DetectorState(at_ms=NOW))}
    assert set(found) == {urn("node"), urn("wh")}, "each description recording a change is named; ref records none"
    assert "(per the build of db.node)" in found[urn("wh")].message
    assert found[urn("wh")].evidence["age_hours"] == 300.0


ages = st.one_of(st.none(), st.integers(min_value=0, max_value=24 * 30))


@settings(max_examples=150, deadline=None)
@given(
    evidence=st.fixed_dictionaries({n: ages for n in TWINS}),
    windows=st.dictionaries(st.sampled_from(TWINS), st.integers(min_value=1, max_value=24 * 20), max_size=3),
)
def test_every_command_agrees_with_the_rule(evidence, windows):
    """Newest record among the descriptions, strictest window among their names: the scan, the gate and
    protect all give that answer, whatever each description records."""
    c, config = estate(evidence, windows)
    recorded = [h for h in evidence.values() if h is not None]
    window = min(windows.get(n, SHIPPED["freshness"]["default_window_hours"]) for n in TWINS)
    known = bool(recorded)
    stale = known and min(recorded) > window
    assert scan_says(c, config) == stale
    assert gate_says(c, config) == ("FAIL" if stale else "PASS" if known else "SKIP")
    value, why = protect_says(c, config)
    assert value == (1.0 if known and not stale else 0.0)
    assert why.startswith("changed" if known else "nobody records")
