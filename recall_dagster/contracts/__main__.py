"""``python -m recall_dagster.contracts DIR``: export the JSON Schemas of every contract to DIR."""

from __future__ import annotations

import sys
from pathlib import Path

from recall_dagster.contracts.export import export

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m recall_dagster.contracts DIR")
    for path in export(Path(sys.argv[1])):
        print(path)
