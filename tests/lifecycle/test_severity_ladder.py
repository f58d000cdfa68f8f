"""One severity ladder: a finding's CRITICAL, an incident band's and an impact verdict's stand on it alike.

Before, "CRITICAL" meant a finding's severity, an incident band (half the
features poisoned) and a score tier, on scales nothing compared; an incident's
HIGH could be set against no threshold at all. Now every band says where it
stands on the ladder, in the configuration (checked) and in the JSON.
"""

from __future__ import annotations

import pytest
import yaml
from lifecycle_estates import closure, estate, record

from recall_dagster.config.load import load
from recall_dagster.errors import ConfigError
from recall_dagster.lifecycle.blast import blast_radius
from recall_dagster.severity import Severity


def overlay(tmp_path, data: dict) -> str:
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_each_incident_band_and_each_measured_verdict_stands_on_the_findings_ladder() -> None:
    loaded = load()
    scale = loaded.lifecycle.severity.scale
    assert [(name, scale.on_ladder(name)) for name in scale.names] == [
        ("CRITICAL", Severity.CRITICAL), ("HIGH", Severity.WARN), ("MEDIUM", Severity.WARN), ("LOW", Severity.INFO)]
    assert loaded.impact.measured.block_severity is Severity.CRITICAL, "a BLOCK stands where a CRITICAL finding does"
    assert loaded.impact.measured.pass_severity is Severity.INFO
    assert loaded.lifecycle.gate.min_severity is Severity.WARN, "thresholds are on the same ladder"


def test_a_model_s_blast_radius_says_where_its_band_stands_on_the_ladder() -> None:
    lc = load().lifecycle
    world = estate([closure(1, live=True)])
    (impact,) = blast_radius([record([(0, "SUCCESS"), (10, "FAILURE")])], world.closures, world.columns, lc).models
    assert (impact.severity, impact.level) == ("HIGH", Severity.WARN)
    assert impact.contract().as_json()["level"] == "WARN"


def test_a_team_s_own_bands_are_placed_on_the_ladder_or_refused(tmp_path) -> None:
    own = {"lifecycle": {"severity": {
        "bands": {"replace": True, "SEV1": 0.3, "SEV2": 0.0},
        "priorities": {"replace": True, "SEV1": 0, "SEV2": 2},
        "ladder": {"replace": True, "SEV1": "critical", "SEV2": "warn"},
    }}}
    scale = load(overlay(tmp_path, own)).lifecycle.severity.scale
    assert [(n, scale.on_ladder(n)) for n in scale.names] == [("SEV1", Severity.CRITICAL), ("SEV2", Severity.WARN)]
    unplaced = {"lifecycle": {"severity": {**own["lifecycle"]["severity"], "ladder": {"replace": True, "SEV1": "WARN"}}}}
    with pytest.raises(ConfigError, match="`lifecycle.severity.ladder.SEV2` is missing: every band needs a place"):
        load(overlay(tmp_path, unplaced))
    upside_down = {"lifecycle": {"severity": {**own["lifecycle"]["severity"],
                                              "ladder": {"replace": True, "SEV1": "INFO", "SEV2": "CRITICAL"}}}}
    with pytest.raises(ConfigError, match="`lifecycle.severity.ladder.SEV1` stands below SEV2, a less severe band"):
        load(overlay(tmp_path, upside_down))
