"""Now, in epoch milliseconds: read by the CLI, the Dagster definitions and the services at their edge, and
handed to the pure core as a value, so the core can replay any instant (``--as-of``)."""

from __future__ import annotations

import time
from recall_dagster.instants import seconds_ms


def clock_ms() -> int:
    return seconds_ms(time.time())
