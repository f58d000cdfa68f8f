"""Named transforms a feature may apply to its source column.

They run in pandas after the warehouse read, not in SQL, because date functions
differ between Postgres and SQLite and the training query must run on both.
The registry validates transform names against this table.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd


def _day_of_week(values: pd.Series) -> pd.Series:
    """Monday = 0 … Sunday = 6; NULL dates stay NULL so the row is counted as dropped."""
    return pd.to_datetime(values, errors="raise").dt.dayofweek.astype("float64")


TRANSFORMS: dict[str, Callable[[pd.Series], pd.Series]] = {
    "day_of_week": _day_of_week,
}
