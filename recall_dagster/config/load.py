"""``recall.yaml`` read in its layers: the shipped defaults, the estate's own file, a file a command names.

Each layer is checked against the shipped file's shape (:mod:`recall_dagster.config.schema`)
and laid over the last by the overlay rules (:mod:`recall_dagster.config.overlay`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from recall_dagster.config.overlay import merge
from recall_dagster.config.schema import validate_layer
from recall_dagster.detect import RecallConfig, check_config, parse_config
from recall_dagster.errors import ConfigError
from recall_dagster.narrate import rewrite_from
from recall_dagster.settings import env_home

DEFAULT_CONFIG = Path(__file__).parents[1] / "recall.yaml"  # the defaults, shipped in the package


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"cannot read config {path}: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise ConfigError(f"config {path} is not UTF-8 text ({err.reason} at byte {err.start})") from err
    except yaml.YAMLError as err:
        raise ConfigError(f"config {path} is not valid YAML: {err}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must be a mapping at the top level")
    return data


def load_yaml_config(path: str | os.PathLike[str] | None = None) -> tuple[dict[str, Any], str]:
    """The shipped ``recall.yaml``, then ``$RECALL_HOME/recall.yaml`` (the estate's own settings) when it
    exists, then ``path`` when given, each laid over the last key by key; and the file that spoke last."""
    shipped = _read_yaml(DEFAULT_CONFIG)
    data, source = shipped, str(DEFAULT_CONFIG)
    estate = env_home() / "recall.yaml"
    layers = ([estate] if estate.is_file() else []) + ([Path(path)] if path is not None else [])
    for layer in layers:
        if layer.resolve() != DEFAULT_CONFIG.resolve():
            overlay = _read_yaml(layer)
            validate_layer(overlay, shipped, str(layer))
            data, source = merge(data, overlay), str(layer)
    return data, source


def load_config(path: str | os.PathLike[str] | None = None) -> RecallConfig:
    """The scan's configuration (see :func:`load_yaml_config`)."""
    data, source = load_yaml_config(path)
    config = parse_config(data, source)
    check_config(config)
    rewrite_from(data, source)
    return config
