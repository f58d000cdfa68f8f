"""Every layer of recall.yaml is checked against the models: typos and wrong types fail, naming key and file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from recall_dagster.errors import ConfigError
from recall_dagster.config.load import DEFAULT_CONFIG, load
from recall_dagster.settings import REPO_ROOT

SHIPPED = yaml.safe_load(DEFAULT_CONFIG.read_text())


def readme_overlays() -> list[dict]:
    """The yaml examples of the README and the documentation that are recall.yaml layers (not Dagster's own
    dagster.yaml)."""
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    blocks = [b for page in pages for b in re.findall(r"```yaml\n(.*?)```", page.read_text(), flags=re.S)]
    loaded = [yaml.safe_load(b) for b in blocks]
    return [b for b in loaded if isinstance(b, dict) and set(b) & set(SHIPPED)]


def test_the_shipped_file_the_demo_layer_and_every_readme_example_validate(tmp_path: Path) -> None:
    assert load(REPO_ROOT / "seed" / "recall.yaml").source.endswith("seed/recall.yaml")
    examples = readme_overlays()
    assert examples, "the documentation shows at least one recall.yaml layer"
    for number, example in enumerate(examples):
        layer = tmp_path / f"readme-{number}.yaml"
        layer.write_text(yaml.safe_dump(example))
        load(layer)


@pytest.mark.parametrize(
    ("layer", "message"),
    [
        ("scroing: {fail_tier: AT_RISK}", "unknown key `scroing`; did you mean `scoring`?"),
        ("scoring: {fail_teir: AT_RISK}", "unknown key `scoring.fail_teir`; did you mean `fail_tier`?"),
        ("lifecycle: {gate: {max_row_drop: lots}}", "`lifecycle.gate.max_row_drop` must be a finite number in [0, 1], not a string"),
        ("impact: {measured: true}", "`impact.measured` must be a mapping, not true or false"),
        ("production: {aliases: prod}", "`production.aliases` must be a list of strings, not a string"),
        ("detectors: {pii_exposure: {enabeld: false}}", "did you mean `enabled`?"),
    ],
)
def test_a_mistake_fails_naming_the_key_its_file_and_the_nearest_valid_key(
    tmp_path: Path, layer: str, message: str
) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(layer + "\n")
    with pytest.raises(ConfigError) as raised:
        load(path).scan
    assert str(raised.value).startswith(f"{path}: ") and message in str(raised.value)


def test_keys_the_user_chooses_are_free_but_their_values_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(
        'freshness: {windows: {"*.marts.*": 26}}\n'
        "scoring: {tiers: {SEVERE: 80, CRITICAL: 60, AT_RISK: 30, WATCH: 1}}\n"
        "detectors: {pii_exposure: {enabled: false}}\n"
        "diagnose: {metrics: {log_loss: {higher_is_better: false, tolerance: 0.01, relative: true}}}\n"
    )
    assert load(path).scan.scoring.ranked[0].name == "SEVERE"
    path.write_text("diagnose: {metrics: {log_loss: {higher_is_better: false, tolerance: small}}}\n")
    with pytest.raises(ConfigError, match="`diagnose.metrics.log_loss.tolerance` must be a finite number >= 0, not a string"):
        load(path).scan
