"""Recall for Dagster: reads DataHub's metadata graph backwards from every model.

``recall_dagster.RecallComponent`` (what a ``defs.yaml``'s ``type:`` names) is
imported on first use: importing the package loads no Dagster, so ``recall``'s
start-up stays light.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "RecallComponent":
        from recall_dagster.defs.component import RecallComponent

        return RecallComponent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy name too: ``dg list components`` finds a registry module's components by its ``dir()``."""
    return sorted([*globals(), "RecallComponent"])
