"""``recall.yaml`` read in its layers: the shipped defaults, the estate's own file, a file a command names.

The layers are laid over each other by the overlay rules (:mod:`recall_dagster.config.overlay`), the
result is checked whole against the models (:mod:`recall_dagster.config.models`), so a mistake anywhere
fails every command alike, naming the layer that wrote it (:mod:`recall_dagster.config.mistakes`), and
each domain's view is built from it (:mod:`recall_dagster.config.build`). A command or a Dagster run
loads it once and hands the :class:`Configuration` down; the same files with the same contents give the
same configuration, kept, so a process that loads it again does not read and check it twice.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml
from pydantic import ValidationError

from recall_dagster.config.build import Configuration, build
from recall_dagster.config.mistakes import Layer, explain
from recall_dagster.config.models import RecallFile
from recall_dagster.config.overlay import check_replace, merge
from recall_dagster.errors import ConfigError
from recall_dagster.settings import env_home

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


def _layered(layers: list[Path], texts: list[bytes]) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    said = [(str(layer), _parsed(layer, raw)) for layer, raw in zip(layers, texts)]
    data: dict[str, Any] = {}
    for source, layer in said:
        check_replace(layer, source)
        data = merge(data, layer)
    return said, data


def load_yaml_config(path: ConfigPath = None) -> tuple[dict[str, Any], str]:
    """The layers (:func:`_layers`) laid over each other key by key, and the file that spoke last: the raw
    mapping, read afresh (the caller may change it)."""
    layers = _layers(path)
    return _layered(layers, _texts(layers))[1], str(layers[-1])


def configuration(data: Mapping[str, Any], source: str, said: Sequence[Layer] = ()) -> Configuration:
    """A whole file's mapping checked against the models and built into each domain's view: what
    :func:`load` does once the layers are laid (``said``: each layer's own mapping, to blame the right one)."""
    try:
        checked = RecallFile.model_validate(data)
    except ValidationError as err:
        raise explain(err, said or [(source, data)]) from None
    return build(checked, source)


def load(path: ConfigPath = None) -> Configuration:
    """Every section of the layered configuration, each value checked, whatever the command asks for; the
    same files with the same contents give the same (kept) configuration."""
    layers = _layers(path)
    texts = _texts(layers)
    key = hashlib.sha256(b"\0".join(str(p).encode() + b"\0" + t for p, t in zip(layers, texts))).hexdigest()
    found = _loaded.get(key)
    if found is not None:
        return found
    said, data = _layered(layers, texts)
    loaded = configuration(data, str(layers[-1]), said)
    if len(_loaded) >= _KEPT:
        _loaded.pop(next(iter(_loaded)))
    _loaded[key] = loaded
    return loaded
