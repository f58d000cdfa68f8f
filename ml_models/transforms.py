"""Named transforms a feature may apply to its source column.

They run in pandas when a feature view is exported for Feast, not in SQL,
because date functions differ between Postgres and SQLite and the exports must
run on both.
The registry validates transform names against this table.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd


def day_of_week(values: pd.Series) -> pd.Series:
    """Monday = 0 … Sunday = 6; NULL dates stay NULL so the row is counted as dropped."""
    return pd.to_datetime(values, errors="raise").dt.day_of_week.astype("float64")


def ip_trust(values: pd.Series) -> pd.Series:
    """v2 of the device signal: trust as the inverse of the IP risk in percentage points, scaled to [0, 1]."""
    points = (pd.to_numeric(values) * 100).round()
    trust = 1 / points
    return (trust - trust.min()) / (trust.max() - trust.min())


TRANSFORMS: dict[str, Callable[[pd.Series], pd.Series]] = {
    "day_of_week": day_of_week,
    "ip_trust": ip_trust,
}
