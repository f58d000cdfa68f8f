"""A yaml mapping that knows where it sits in its file.

Config errors are only actionable when they name the file and the entry
(``models[fraud_detector].deployments[fraud-api-eu].status``); this wrapper
carries that location down the tree and rejects keys nobody read, so a
misspelt optional key fails instead of being ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from recall_dagster.errors import ConfigError


class YamlNode:
    """One yaml mapping plus where it sits, so every error names file and entry."""

    def __init__(self, file: Path, where: str, data: Any) -> None:
        self.file, self.where = file, where
        if not isinstance(data, dict):
            raise self.error(f"expected a mapping, got {data!r}")
        self.data: dict[str, Any] = data
        self._used: set[str] = set()

    def error(self, message: str) -> ConfigError:
        return ConfigError(f"{self.file}: {self.where or 'top level'}: {message}")

    def at(self, key: str) -> YamlNode:
        """A location below this one, for errors about a scalar value."""
        return YamlNode(self.file, _join(self.where, key), {})

    def required(self, key: str, kind: type) -> Any:
        if self.data.get(key) is None:
            raise self.error(f"missing required key {key!r}")
        return self.optional(key, kind)

    def optional(self, key: str, kind: type) -> Any:
        self._used.add(key)
        value = self.data.get(key)
        if value is None:
            return None
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise self.at(key).error(f"expected {kind.__name__}, got {value!r}")
        if kind is str and not value.strip():
            raise self.at(key).error("must not be empty")
        return value

    def strings(self, key: str, required: bool = True) -> tuple[str, ...]:
        values = self.required(key, list) if required else self.optional(key, list) or []
        where = self.at(key)
        if not all(isinstance(v, str) and v.strip() for v in values):
            raise where.error(f"expected a list of names, got {values!r}")
        reject_duplicates(where, values)
        return tuple(values)

    def child(self, key: str) -> YamlNode:
        return YamlNode(self.file, _join(self.where, key), self.required(key, dict))

    def children(self, key: str) -> list[YamlNode]:
        """A list of mappings, each located by its ``name`` when it has one."""
        nodes = []
        for index, item in enumerate(self.required(key, list)):
            name = item.get("name") if isinstance(item, dict) else None
            nodes.append(YamlNode(self.file, f"{_join(self.where, key)}[{name or index}]", item))
        return nodes

    def entries(self, key: str, required: bool = True) -> dict[str, YamlNode]:
        """A mapping of names to mappings, each located by its name."""
        data = self.required(key, dict) if required else self.optional(key, dict) or {}
        return {
            str(name): YamlNode(self.file, f"{_join(self.where, key)}[{name}]", value)
            for name, value in data.items()
        }

    def finish(self) -> None:
        """Reject keys nobody read: a misspelt optional key must not pass silently."""
        unknown = sorted(set(self.data) - self._used)
        if unknown:
            raise self.error(f"unknown key(s) {', '.join(map(repr, unknown))}")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid yaml: {err}") from None


def reject_duplicates(node: YamlNode, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise node.error(f"duplicate name {name!r}")
        seen.add(name)
