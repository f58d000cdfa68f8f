"""``python -m seed build|break|heal|reset``: the estate lifecycle, the same commands as ``recall estate``."""

import sys

from recall_dagster.cli import cli

cli(["estate", *sys.argv[1:]], prog_name="python -m seed")
