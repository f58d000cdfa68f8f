"""recall.yaml: validated up front, overlays merge key by key, mistakes exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.config.load import DEFAULT_CONFIG, load
from recall_dagster.config.overlay import merge
from recall_dagster.config.load import configuration
from recall_dagster.detect import DETECTORS, Severity
from recall_dagster.errors import EXIT_USAGE, ConfigError


def shipped() -> dict:
    return yaml.safe_load(DEFAULT_CONFIG.read_text())


def test_shipped_config_covers_every_detector_case(config):
    for d in DETECTORS:
        for case in d.cases:
            assert isinstance(config.severity(d.name, case), Severity)
    assert config.freshness.default_window_hours == 168
    assert config.scoring.fail_tier == "CRITICAL"


def test_overlay_changes_only_what_it_names(tmp_path):
    overlay = tmp_path / "mine.yaml"
    overlay.write_text("scoring:\n  weights: {WARN: 15}\nfreshness:\n  windows: {'*.raw.*': 24}\n")
    config = load(overlay).scan
    assert config.scoring.weights.points[Severity.WARN] == 15
    assert config.scoring.weights.points[Severity.CRITICAL] == 30
    assert config.freshness.windows == {"*.raw.*": 24.0}
    assert config.source == str(overlay)


@pytest.mark.parametrize(
    "override, message",
    [
        ({"scoring": {"weights": {"WARN": "ten"}}}, "`scoring.weights.WARN` must be a finite number >= 0, not a string"),
        ({"detectors": {"pii_exposure": {"severity": {"unjustified": "LOUD"}}}}, "must be one of CRITICAL, WARN, INFO"),
        ({"scoring": {"fail_tier": "DOOM"}}, "`scoring.fail_tier` must be one of CRITICAL, AT_RISK, WATCH, HEALTHY"),
        ({"closure": {"max_depth": -1}}, "`closure.max_depth` must be an integer >= 0, not -1"),
        ({"label_tables": "labels"}, "`label_tables` must be a list of strings, not a string"),
    ],
)
def test_bad_values_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message) as err:
        configuration(merge(shipped(), override), "recall.yaml")
    assert err.value.exit_code == EXIT_USAGE


def test_missing_and_unknown_detectors_are_refused():
    data = shipped()
    del data["detectors"]["version_mismatch"]
    with pytest.raises(ConfigError, match="`detectors.version_mismatch` is missing"):
        configuration(data, "recall.yaml")
    data = merge(shipped(), {"detectors": {"crystal_ball": {"severity": {}}}})
    with pytest.raises(ConfigError, match="unknown detector"):
        configuration(data, "recall.yaml")
    data = merge(shipped(), {"detectors": {"orphaned_feature": {"severity": {"missing": "WARN", "removed": "WARN"}}}})
    data["detectors"]["orphaned_feature"]["severity"].pop("deprecated")
    with pytest.raises(ConfigError, match="`detectors.orphaned_feature.severity.deprecated` is not set"):
        configuration(data, "recall.yaml")


def test_unreadable_config_is_a_usage_error(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("scoring: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(broken).scan
    with pytest.raises(ConfigError, match="cannot read config"):
        load(tmp_path / "absent.yaml").scan


def overlay(tmp_path, data: dict) -> str:
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_team_s_first_match_rules_come_before_the_shipped_ones(tmp_path):
    from recall_dagster.config.load import load

    team = overlay(tmp_path, {"lifecycle": {
        "classification": {"not_null_payment*": "finance"},
        "row_counts": {"postgres:analytics.*": "env:ANALYTICS_URL"},
    }})
    lc = load(team).lifecycle
    assert lc.classify("not_null_payment_amount") == "finance", "the team's glob wins over the shipped not_null*"
    assert lc.classify("not_null_order_id") == "completeness", "the shipped rules still apply after the team's"
    assert next(iter(lc.row_counts.items())) == ("postgres:analytics.*", "env:ANALYTICS_URL"), (
        "the gate counts rows where the team says")


def test_replace_true_puts_a_team_s_own_tiers_in_place_of_the_shipped_ones(tmp_path):
    merged = load(overlay(tmp_path, {"scoring": {"tiers": {"SEVERE": 60}, "fail_tier": "SEVERE"}})).scan
    assert {"SEVERE", "CRITICAL"} <= set(merged.scoring.tier_names()), "a mapping merges key by key"
    own_tiers = {"scoring": {"tiers": {"replace": True, "SEVERE": 60, "MILD": 20}, "fail_tier": "SEVERE"}}
    with pytest.raises(ConfigError, match="`writeback.tags.CRITICAL` names tier 'CRITICAL', which scoring.tiers"):
        load(overlay(tmp_path, own_tiers))
    own = load(overlay(tmp_path, {**own_tiers, "writeback": {"tags": {"replace": True, "SEVERE": "recall:severe"},
                                                             "document_tier": "MILD"}})).scan
    assert own.scoring.tier_names() == ("SEVERE", "MILD", own.scoring.healthy_tier)
    with pytest.raises(ConfigError, match="`scoring.tiers.replace` must be true or false"):
        load(overlay(tmp_path, {"scoring": {"tiers": {"replace": "yes"}}})).scan


def test_a_bad_narration_setting_fails_every_command_that_loads_the_configuration(tmp_path):
    with pytest.raises(ConfigError, match="`narration.timeout_seconds` must be a finite number > 0, not -3"):
        load(overlay(tmp_path, {"narration": {"timeout_seconds": -3}})).scan


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_number_that_is_not_finite_is_refused_by_name(tmp_path, bad):
    with pytest.raises(ConfigError, match="`freshness.default_window_hours` must be a finite number >= 0"):
        load(overlay(tmp_path, {"freshness": {"default_window_hours": bad}})).scan
    with pytest.raises(ConfigError, match="must be a finite number"):
        load(overlay(tmp_path, {"scoring": {"weights": {"CRITICAL": bad}}})).scan


def test_a_config_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("freshness: {default_window_hours: 36}  # café\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=f"config {path} is not UTF-8 text"):
        load(str(path)).scan


def test_an_empty_as_of_is_refused_not_read_as_now(tmp_path):
    from click.testing import CliRunner

    from recall_dagster.cli import cli

    done = CliRunner().invoke(cli, ["scan", "--as-of", "", "--graph", str(tmp_path / "none.db")])
    assert done.exit_code == 2 and "--as-of '' is not an ISO-8601 date" in done.output


@pytest.mark.parametrize(
    "override, message",
    [
        ({"protect": {"top": 0}}, "`protect.top` must be an integer >= 1, not 0"),
        ({"impact": {"confidence": 2}}, r"`impact.confidence` must be a finite number in \(0, 1\), not 2"),
        ({"dagster": {"sensor_interval_seconds": 5}}, "`dagster.sensor_interval_seconds` must be an integer >= 30"),
        ({"diagnose": {"hypotheses": "many"}}, "`diagnose.hypotheses` must be a mapping, not a string"),
    ],
)
def test_a_mistake_in_any_section_fails_every_command(tmp_path, override, message):
    """The scan reads none of these sections, yet a typo in one fails it as it fails the command that does:
    a configuration is checked whole when it is loaded, never half."""
    with pytest.raises(ConfigError, match=message):
        load(overlay(tmp_path, override)).scan
    with pytest.raises(ConfigError, match=message):
        load(overlay(tmp_path, override)).lifecycle


def test_the_configuration_is_read_once_per_content_of_its_files(tmp_path):
    """Each command asks for several sections (scan, lifecycle, impact...): one read and one check serve
    them all, and a file edited since is read again."""
    path = overlay(tmp_path, {"scoring": {"weights": {"WARN": 15}}})
    first = load(path)
    assert load(path) is first and load(path).lifecycle is first.lifecycle
    overlay(tmp_path, {"scoring": {"weights": {"WARN": 16}}})
    assert load(path).scan.scoring.weights.points[Severity.WARN] == 16


def test_a_copy_of_a_section_with_other_keys_answers_from_them(tmp_path):
    """What a section derives from its keys is worked out once; a copy with other keys (a test's, a Dagster
    component's) works it out again instead of answering from the keys it was copied from, and keeps what the
    loader joined to it."""
    loaded = load(overlay(tmp_path, {"lifecycle": {"failing_results": ["failure"]}}))
    lifecycle, scoring = loaded.lifecycle, loaded.scan.scoring
    assert lifecycle.reach.table_level and lifecycle.failing("FAILURE") and scoring.ranked[0].name == "CRITICAL"
    narrower = lifecycle.model_copy(update={"table_level": False, "failing_results": ["error"]})
    assert not narrower.reach.table_level and narrower.failing("ERROR") and not narrower.failing("FAILURE")
    assert narrower.warehouse is lifecycle.warehouse and narrower.dagster_url == lifecycle.dagster_url
    renamed = scoring.model_copy(update={"tiers": {f"T{name}": least for name, least in scoring.tiers.items()}})
    assert renamed.ranked[0].name == "TCRITICAL" and scoring.ranked[0].name == "CRITICAL"


def test_a_bad_section_exits_2_from_the_gate_with_the_key_named(tmp_path, monkeypatch):
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(cli, ["gate", "churn", "--config", overlay(tmp_path, {"protect": {"top": 0}})])
    assert result.exit_code == EXIT_USAGE and "`protect.top` must be an integer >= 1" in result.output


# Nine levels of nine aliases: printed whole, the value is 9**9 strings (312 MB on stderr, 1.7 GB of memory).
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, n in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("key", ["closure:\n  max_depth: *i\n", "scoring:\n  replace: *i\n"])
def test_a_yaml_alias_bomb_is_quoted_as_a_bounded_excerpt(tmp_path, key: str) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB + key)
    recall = Path(sys.executable).with_name("recall")
    done = subprocess.run([str(recall), "scan", "--config", str(bomb), "--graph", str(tmp_path / "g.db")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_USAGE, done.stderr[-2000:]
    assert "must be" in done.stderr and len(done.stderr) < 1_000, done.stderr[:2000]
