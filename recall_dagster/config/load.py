"""``recall.yaml`` read in its layers: the shipped defaults, the estate's own file, a file a command names.

Each layer is checked against the shipped file's shape (:mod:`recall_dagster.config.schema`)
and laid over the last by the overlay rules (:mod:`recall_dagster.config.overlay`); then every
section is parsed at once (:class:`Configuration`), so a mistake anywhere fails every command
alike, and a command or a Dagster run that asks for several sections reads and checks the files
once: a configuration is kept per content of its layers.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from recall_dagster.config.dagster import DagsterConfig, parse_dagster_config
from recall_dagster.config.overlay import merge
from recall_dagster.config.schema import validate_layer
from recall_dagster.config.warehouse import parse_warehouse
from recall_dagster.detect import RecallConfig, check_config, parse_config
from recall_dagster.diagnose.config import DiagnoseConfig, parse_diagnose_config
from recall_dagster.errors import ConfigError
from recall_dagster.impact.config import ImpactConfig, parse_impact_config
from recall_dagster.lifecycle.config import LifecycleConfig, parse_lifecycle_config
from recall_dagster.protect.config import ProtectConfig, parse_protect_config
from recall_dagster.rewrite import Rewrite, rewrite_from
from recall_dagster.settings import env_home
from recall_dagster.writeback.config import WritebackConfig, parse_writeback_config

DEFAULT_CONFIG = Path(__file__).parents[1] / "recall.yaml"  # the defaults, shipped in the package


def _parsed(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ConfigError(f"config {path} is not UTF-8 text ({err.reason} at byte {err.start})") from err
    except yaml.YAMLError as err:
        raise ConfigError(f"config {path} is not valid YAML: {err}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must be a mapping at the top level")
    return data


ConfigPath = str | os.PathLike[str] | None
_KEPT = 8  # configurations kept per process: a test suite tries many overlays, a command or a run one


@dataclass(frozen=True)
class Configuration:
    """Every section of the layered ``recall.yaml``, parsed and checked: what one command is handed."""

    source: str  # the file that spoke last, for messages
    scan: RecallConfig
    lifecycle: LifecycleConfig
    impact: ImpactConfig
    writeback: WritebackConfig
    protect: ProtectConfig
    diagnose: DiagnoseConfig
    dagster: DagsterConfig
    narration: Rewrite


_loaded: dict[str, Configuration] = {}


def _layers(path: ConfigPath) -> list[Path]:
    """The shipped ``recall.yaml``, then ``$RECALL_HOME/recall.yaml`` (the estate's own settings) when it
    exists, then ``path`` when given; the shipped file named again is not laid twice."""
    estate = env_home() / "recall.yaml"
    extra = ([estate] if estate.is_file() else []) + ([Path(path)] if path is not None else [])
    return [DEFAULT_CONFIG, *(p for p in extra if p.resolve() != DEFAULT_CONFIG.resolve())]


def _texts(layers: list[Path]) -> list[bytes]:
    out = []
    for layer in layers:
        try:
            out.append(layer.read_bytes())
        except OSError as err:
            raise ConfigError(f"cannot read config {layer}: {err.strerror}") from err
    return out


def _merged(layers: list[Path], texts: list[bytes]) -> tuple[dict[str, Any], str]:
    shipped = _parsed(layers[0], texts[0])
    data, source = shipped, str(layers[0])
    for layer, raw in zip(layers[1:], texts[1:]):
        overlay = _parsed(layer, raw)
        validate_layer(overlay, shipped, str(layer))
        data, source = merge(data, overlay), str(layer)
    return data, source


def load_yaml_config(path: ConfigPath = None) -> tuple[dict[str, Any], str]:
    """The layers (:func:`_layers`) laid over each other key by key, and the file that spoke last: the raw
    mapping, read afresh (the caller may change it)."""
    layers = _layers(path)
    return _merged(layers, _texts(layers))


def _section(data: Mapping[str, Any], name: str, source: str) -> Mapping[str, Any]:
    if name not in data:
        raise ConfigError(f"{source}: the {name} section is missing")
    return data[name]


def load(path: ConfigPath = None) -> Configuration:
    """Every section of the layered configuration, each value checked, whatever the command asks for; the
    same files with the same contents give the same (kept) configuration."""
    layers = _layers(path)
    texts = _texts(layers)
    key = hashlib.sha256(b"\0".join(str(p).encode() + b"\0" + t for p, t in zip(layers, texts))).hexdigest()
    found = _loaded.get(key)
    if found is not None:
        return found
    data, source = _merged(layers, texts)
    scan = parse_config(data, source)
    check_config(scan)
    warehouse = parse_warehouse(data, source)
    loaded = Configuration(
        source=source,
        scan=scan,
        lifecycle=parse_lifecycle_config(_section(data, "lifecycle", source), source, warehouse),
        impact=parse_impact_config(_section(data, "impact", source), source, warehouse),
        writeback=parse_writeback_config(data, source),
        protect=parse_protect_config(_section(data, "protect", source), source),
        diagnose=parse_diagnose_config(_section(data, "diagnose", source), source),
        dagster=parse_dagster_config(_section(data, "dagster", source), source),
        narration=rewrite_from(data, source),
    )
    if len(_loaded) >= _KEPT:
        _loaded.pop(next(iter(_loaded)))
    _loaded[key] = loaded
    return loaded


def load_config(path: ConfigPath = None) -> RecallConfig:
    """The scan's sections (:func:`load`)."""
    return load(path).scan


def load_lifecycle_config(path: ConfigPath = None) -> LifecycleConfig:
    return load(path).lifecycle


def load_impact_config(path: ConfigPath = None) -> ImpactConfig:
    return load(path).impact


def load_writeback_config(path: ConfigPath = None) -> WritebackConfig:
    return load(path).writeback


def load_protect_config(path: ConfigPath = None) -> ProtectConfig:
    return load(path).protect


def load_diagnose_config(path: ConfigPath = None) -> DiagnoseConfig:
    return load(path).diagnose


def load_dagster_config(path: ConfigPath = None) -> DagsterConfig:
    return load(path).dagster


def load_rewrite(path: ConfigPath = None) -> Rewrite:
    return load(path).narration


