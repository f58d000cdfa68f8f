"""The allowlist of upstream changes an impact test can replay, each a pure function of a column.

A mutation stands for something that happens to a column in a warehouse: a
load that leaves NULLs, a unit switched from euros to cents, a feed whose time
zone was dropped, numbers that start arriving as strings, a column that is
gone.  Each operator takes the column, the rows it touches and its argument,
and returns the column as the model would receive it; the caller decides
which rows (``fraction``, drawn from a seeded generator), so the same
experiment always touches the same rows.  Nothing here reads a model or a
graph: they are tested on their own, and the allowlist
(:mod:`recall_dagster.impact.mutation_spec`) is the only way in.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import pandas as pd

from recall_dagster.errors import ConfigError, RecallError
from recall_dagster.impact.mutation_spec import Mutation, number_arg

UNSEEN_CATEGORY = "__recall_unseen__"


class MutationError(RecallError):
    """The mutation does not apply to this column (a scale of text, a time shift of prices)."""


Operator = Callable[[pd.Series, np.ndarray, "str | None", np.random.Generator], "pd.Series | None"]


def _is_number(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _numeric(values: pd.Series, op: str) -> pd.Series:
    if not _is_number(values):
        raise MutationError(f"{op} needs a numeric column; {values.name} holds {values.dtype}")
    return values.astype("float64")


def null_fraction(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """NULLs where the load lost values; the share of rows is chosen by the caller (``null_fraction:P``)."""
    if pd.api.types.is_datetime64_any_dtype(values):
        out = values.copy()
        out.iloc[rows] = pd.NaT
        return out
    number = _is_number(values)
    out = values.astype("float64" if number else object).copy()
    out.iloc[rows] = np.nan if number else None
    return out


def scale(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """A unit change: multiplied by ``arg`` (default 100, euros arriving as cents)."""
    factor = number_arg(arg, "scale") if arg is not None else 100.0
    out = _numeric(values, "scale").copy()
    out.iloc[rows] = out.iloc[rows] * factor
    return out


def shift(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """An offset: ``arg`` added (default one standard deviation of the column)."""
    out = _numeric(values, "shift").copy()
    delta = number_arg(arg, "shift") if arg is not None else float(np.nan_to_num(out.std(ddof=0)))
    out.iloc[rows] = out.iloc[rows] + delta
    return out


def clip(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """A saturating source: values held to ``LO,HI`` or ``HI`` (default the 10th and 90th percentiles)."""
    out = _numeric(values, "clip").copy()
    if arg is None:
        low, high = (float(q) for q in out.quantile([0.1, 0.9]))
    elif "," in arg:
        low_text, _, high_text = arg.partition(",")
        low, high = number_arg(low_text, "clip"), number_arg(high_text, "clip")
    else:
        low, high = -np.inf, number_arg(arg, "clip")
    out.iloc[rows] = out.iloc[rows].clip(lower=low, upper=high)
    return out


def constant(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """A frozen feed: one value everywhere (``arg``, default the column's median, or its mode for text)."""
    numeric = _is_number(values)
    if arg is not None:
        value: object = number_arg(arg, "constant") if numeric else arg
    elif numeric:
        value = float(values.median()) if values.notna().any() else 0.0
    else:
        modes = values.dropna().mode()
        value = modes.iloc[0] if len(modes) else UNSEEN_CATEGORY
    out = values.astype("float64" if numeric else object).copy()
    out.iloc[rows] = value
    return out


def shuffle(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """The column's values kept but dealt to the wrong rows: its relation to every other column breaks."""
    out = values.copy()
    out.iloc[rows] = out.iloc[rows].to_numpy()[rng.permutation(len(rows))]
    return out


def category_remap(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """Codes renamed upstream: ``A=B[,C=D]`` maps values, no argument turns them into an unseen category."""
    numeric = _is_number(values)
    out = values.astype("float64" if numeric else object).copy()
    touched = out.iloc[rows]
    if arg is None:
        if numeric:
            raise MutationError(
                f"category_remap without a mapping needs a categorical column; {values.name} holds numbers "
                "(give category_remap:OLD=NEW)"
            )
        out.iloc[rows] = touched.where(touched.isna(), UNSEEN_CATEGORY)
        return out
    mapping: dict[object, object] = {}
    for pair in arg.split(","):
        old, sep, new = (part.strip() for part in pair.partition("="))
        if not sep:
            raise ConfigError(f"mutation category_remap: {pair!r} is not OLD=NEW")
        key: object = number_arg(old, "category_remap") if numeric else old
        mapping[key] = number_arg(new, "category_remap") if numeric else new
    out.iloc[rows] = touched.map(lambda v: mapping.get(v, v))
    return out


def timezone_shift(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """A feed whose time zone was dropped or changed: timestamps moved by ``arg`` hours (default 1).

    A column already reduced to an hour of day (integers 0..23, as a feature
    derived from a timestamp usually is) moves around the clock instead.
    """
    hours = number_arg(arg, "timezone_shift") if arg is not None else 1.0
    if pd.api.types.is_datetime64_any_dtype(values):
        out = values.copy()
        out.iloc[rows] = out.iloc[rows] + pd.Timedelta(hours=hours)
        return out
    numeric = _is_number(values)
    present = values.dropna()
    if numeric and len(present) and present.between(0, 23).all() and (present == present.round()).all():
        out = values.astype("float64").copy()
        out.iloc[rows] = (out.iloc[rows] + round(hours)) % 24
        return out
    raise MutationError(
        f"timezone_shift needs timestamps or an hour of day (0..23); {values.name} holds {values.dtype}"
    )


def type_coercion(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> pd.Series:
    """Numbers arriving as strings (``'12.5'``), as after a column is retyped to text."""
    _numeric(values, "type_coercion")
    out = values.astype(object).copy()
    touched = out.iloc[rows]
    out.iloc[rows] = touched.where(touched.isna(), touched.map(str))
    return out


def drop(values: pd.Series, rows: np.ndarray, arg: str | None, rng: np.random.Generator) -> None:
    """The column is gone: the model receives no such input at all."""
    return None


OPERATORS: dict[str, Operator] = {
    "null_fraction": null_fraction,
    "scale": scale,
    "shift": shift,
    "clip": clip,
    "constant": constant,
    "shuffle": shuffle,
    "category_remap": category_remap,
    "timezone_shift": timezone_shift,
    "type_coercion": type_coercion,
    "drop": drop,
}


def touched_rows(n: int, fraction: float, seed: int) -> np.ndarray:
    """Positions of the rows a mutation touches: the same ``round(fraction * n)`` rows for a given seed."""
    count = int(round(fraction * n))
    return np.sort(np.random.default_rng(seed).permutation(n)[:count])


def apply(mutation: Mutation, frame: pd.DataFrame, columns: Sequence[str], seed: int) -> pd.DataFrame:
    """A mutated copy of ``frame``: every named column changed on the same rows; ``frame`` is untouched."""
    rows = touched_rows(len(frame), mutation.fraction, seed)
    operator = OPERATORS[mutation.op]
    out = frame.copy()
    for column in columns:
        changed = operator(out[column], rows, mutation.arg, np.random.default_rng(seed + 1))
        if changed is None:
            out = out.drop(columns=[column])
        else:
            out[column] = changed
    return out
