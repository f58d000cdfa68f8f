"""Settings come from the environment and fail with a message, not a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recall_dagster.errors import ConfigError
from recall_dagster.settings import Settings


def test_graph_defaults_to_lite_file_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RECALL_GRAPH", raising=False)
    settings = Settings.from_env()
    assert settings.graph == str(tmp_path / "home" / "datahub.db")
    assert not settings.graph_is_remote
    assert settings.mlflow_uri.startswith("sqlite:///") and str(tmp_path) in settings.mlflow_uri


def test_url_selects_remote_graph(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RECALL_HOME", str(tmp_path))
    monkeypatch.setenv("RECALL_GRAPH", "https://datahub.example.internal:8080")
    assert Settings.from_env().graph_is_remote


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_unwritable_home_is_a_config_error(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ConfigError, match="not writable"):
        Settings.from_env(home=locked / "home").ensure_home()


def test_home_under_a_file_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="RECALL_HOME .* is not writable"):
        Settings.from_env(home=blocker / "home").ensure_home()

