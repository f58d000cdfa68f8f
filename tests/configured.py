"""The shipped ``recall.yaml`` with a change laid over it, checked and built as every command builds it."""

from __future__ import annotations

from typing import Any, Mapping

from recall_dagster.config.load import Configuration, configuration, load_yaml_config
from recall_dagster.config.overlay import merge


def configured(overlay: Mapping[str, Any], source: str = "mine.yaml") -> Configuration:
    """The shipped file with ``overlay`` merged over it by the overlay rules (``replace: true`` included)."""
    return configuration(merge(load_yaml_config()[0], overlay), source)


def with_section(name: str, section: Mapping[str, Any], source: str = "mine.yaml") -> Any:
    """The shipped file with its ``name`` section replaced whole by ``section``: that section's built view."""
    return getattr(configuration({**load_yaml_config()[0], name: section}, source), name)
