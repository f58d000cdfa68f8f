"""Throwaway RECALL_HOMEs for stack tests.

Homes come from ``mkdtemp`` rather than pytest's tmp_path: pgserver opens the
path's parents to its own ``pgserver`` user when we run as root, and pytest
tightens its base directory back to 0700 whenever another session starts.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from recall_dagster.settings import Settings


def fresh_settings(prefix: str) -> Settings:
    """Settings on a new, empty home, ignoring any RECALL_WAREHOUSE_URL in the environment."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    return replace(Settings.from_env(home=home), warehouse_url=None)
