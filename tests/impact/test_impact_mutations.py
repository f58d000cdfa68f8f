"""The mutation allowlist: each operator changes what a user expects, on the seeded rows only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from recall_dagster.errors import ConfigError
from recall_dagster.impact.mutation_spec import MUTATIONS, Mutation, parse_mutation
from recall_dagster.impact.mutations import (
    OPERATORS,
    UNSEEN_CATEGORY,
    MutationError,
    apply,
    category_remap,
    null_fraction,
    touched_rows,
)

N = 201  # odd, so round(fraction * n) is not trivially a "nice" number
SEED = 11


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    city = rng.choice(["paris", "lyon", "nice", "lille"], size=N, p=[0.4, 0.3, 0.2, 0.1]).astype(object)
    city[[3, 50]] = None
    return pd.DataFrame(
        {
            "price": np.round(rng.lognormal(3.0, 0.6, size=N), 2) + 0.01,  # never an integer, never in 0..23 only
            "qty": rng.integers(1, 50, size=N),
            "hour": rng.integers(0, 24, size=N),
            "city": city,
            "ts": pd.date_range("2024-03-01", periods=N, freq="37min"),
        }
    )


def run(spec: str, frame: pd.DataFrame, columns=("price",), fraction: float | None = None, seed: int = SEED):
    mutation = parse_mutation(spec, fraction)
    return mutation, apply(mutation, frame, list(columns), seed)


def split(frame: pd.DataFrame, fraction: float, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    rows = touched_rows(len(frame), fraction, seed)
    mask = np.zeros(len(frame), dtype=bool)
    mask[rows] = True
    return mask, ~mask


# --- touched_rows -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, fraction, count",
    [(201, 0.3, 60), (201, 0.7, 141), (10, 0.27, 3), (1000, 0.001, 1), (7, 1.0, 7), (50, 0.0, 0)],
)
def test_touched_rows_counts_round_fraction_times_n_distinct_sorted_in_range(n, fraction, count):
    rows = touched_rows(n, fraction, seed=3)
    assert len(rows) == count
    assert len(set(rows.tolist())) == len(rows)
    assert np.all(np.diff(rows) > 0)
    assert rows.min(initial=0) >= 0 and rows.max(initial=0) < max(n, 1)


def test_touched_rows_are_the_same_for_a_seed_and_differ_across_seeds():
    assert np.array_equal(touched_rows(500, 0.2, 4), touched_rows(500, 0.2, 4))
    assert not np.array_equal(touched_rows(500, 0.2, 4), touched_rows(500, 0.2, 5))


# --- null_fraction ------------------------------------------------------------------------------


def test_null_fraction_nulls_exactly_round_share_of_rows_and_leaves_the_rest(frame):
    mutation, out = run("null_fraction:0.3", frame)
    assert mutation.fraction == 0.3
    touched, kept = split(frame, 0.3)
    assert out["price"].isna().sum() == round(0.3 * N) == touched.sum()
    assert out["price"][touched].isna().all()
    np.testing.assert_array_equal(out["price"][kept].to_numpy(), frame["price"][kept].to_numpy())
    pd.testing.assert_frame_equal(out.drop(columns="price"), frame.drop(columns="price"))


def test_null_fraction_on_text_leaves_missing_values_on_touched_rows_only(frame):
    _, out = run("null_fraction:0.5", frame, columns=["city"])
    touched, kept = split(frame, 0.5)
    assert out["city"][touched].isna().all()
    assert out["city"][kept].tolist() == frame["city"][kept].tolist()


def test_null_fraction_rounds_the_share_of_rows_to_the_nearest_row(frame):
    _, out = run("null_fraction:0.7", frame)
    assert out["price"].isna().sum() == 141  # 0.7 * 201 = 140.7


def test_null_fraction_zero_changes_no_value(frame):
    _, out = run("null_fraction:0", frame, columns=["price", "qty", "city"])
    assert out["price"].isna().sum() == 0 and out["qty"].isna().sum() == 0
    np.testing.assert_array_equal(out["price"].to_numpy(), frame["price"].to_numpy())
    np.testing.assert_array_equal(out["qty"].to_numpy(), frame["qty"].to_numpy())
    assert out["city"].tolist() == frame["city"].tolist()


def test_null_fraction_without_a_share_uses_fraction(frame):
    mutation, out = run("null_fraction", frame, fraction=0.1)
    assert mutation.fraction == 0.1
    assert out["price"].isna().sum() == round(0.1 * N)


# --- scale --------------------------------------------------------------------------------------


def test_scale_default_multiplies_touched_rows_by_100_only(frame):
    _, out = run("scale", frame, fraction=0.4)
    touched, kept = split(frame, 0.4)
    np.testing.assert_allclose(out["price"][touched], frame["price"][touched] * 100)
    np.testing.assert_array_equal(out["price"][kept].to_numpy(), frame["price"][kept].to_numpy())


def test_scale_with_a_factor_and_on_integers(frame):
    _, out = run("scale:0.01", frame, columns=["price", "qty"], fraction=1.0)
    np.testing.assert_allclose(out["price"], frame["price"] * 0.01)
    np.testing.assert_allclose(out["qty"], frame["qty"] * 0.01)


def test_scale_of_text_is_a_mutation_error(frame):
    with pytest.raises(MutationError, match="numeric"):
        run("scale", frame, columns=["city"])


def test_scale_with_a_non_number_argument_is_a_config_error(frame):
    with pytest.raises(ConfigError, match="not a number"):
        run("scale:ten", frame)


# --- shift --------------------------------------------------------------------------------------


def test_shift_default_adds_one_population_std_to_touched_rows(frame):
    _, out = run("shift", frame, fraction=0.5)
    touched, kept = split(frame, 0.5)
    std = float(np.std(frame["price"].to_numpy()))
    assert std > 0
    np.testing.assert_allclose(out["price"][touched] - frame["price"][touched], std)
    np.testing.assert_array_equal(out["price"][kept].to_numpy(), frame["price"][kept].to_numpy())


def test_shift_with_an_offset(frame):
    _, out = run("shift:-7.5", frame, fraction=1.0)
    np.testing.assert_allclose(out["price"], frame["price"] - 7.5)


def test_shift_of_a_constant_column_adds_nothing_by_default():
    flat = pd.DataFrame({"x": [4.0] * 10})
    out = apply(parse_mutation("shift"), flat, ["x"], 0)
    assert out["x"].tolist() == [4.0] * 10


# --- clip ---------------------------------------------------------------------------------------


def test_clip_holds_touched_rows_within_lo_hi(frame):
    _, out = run("clip:15,30", frame, fraction=0.5)
    touched, kept = split(frame, 0.5)
    assert out["price"][touched].between(15, 30).all()
    np.testing.assert_allclose(out["price"][touched], frame["price"][touched].clip(15, 30))
    np.testing.assert_array_equal(out["price"][kept].to_numpy(), frame["price"][kept].to_numpy())
    # the mutation actually bit: some touched values were outside the bounds
    assert not frame["price"][touched].between(15, 30).all()


def test_clip_with_one_bound_is_an_upper_bound(frame):
    _, out = run("clip:20", frame, fraction=1.0)
    assert out["price"].max() == 20
    assert out["price"].min() == frame["price"].min()


def test_clip_default_is_the_10th_and_90th_percentiles(frame):
    _, out = run("clip", frame, fraction=1.0)
    low, high = np.quantile(frame["price"], [0.1, 0.9])
    assert out["price"].min() == pytest.approx(low)
    assert out["price"].max() == pytest.approx(high)


# --- constant -----------------------------------------------------------------------------------


def test_constant_defaults_to_the_median_on_touched_rows(frame):
    _, out = run("constant", frame, fraction=0.3)
    touched, kept = split(frame, 0.3)
    assert (out["price"][touched] == frame["price"].median()).all()
    np.testing.assert_array_equal(out["price"][kept].to_numpy(), frame["price"][kept].to_numpy())


def test_constant_defaults_to_the_mode_for_text(frame):
    _, out = run("constant", frame, columns=["city"], fraction=1.0)
    assert frame["city"].mode().iloc[0] == "paris"
    assert out["city"].tolist() == ["paris"] * N


def test_constant_with_a_value(frame):
    _, out = run("constant:-1", frame, columns=["price", "qty"], fraction=1.0)
    assert (out["price"] == -1).all() and (out["qty"] == -1).all()
    _, out = run("constant:berlin", frame, columns=["city"], fraction=1.0)
    assert set(out["city"]) == {"berlin"}


# --- shuffle ------------------------------------------------------------------------------------


def test_shuffle_keeps_the_values_but_breaks_their_order(frame):
    _, out = run("shuffle", frame, columns=["price"], fraction=1.0)
    assert sorted(out["price"]) == sorted(frame["price"])
    moved = (out["price"].to_numpy() != frame["price"].to_numpy()).mean()
    assert moved > 0.9


def test_shuffle_only_deals_values_among_touched_rows(frame):
    _, out = run("shuffle", frame, columns=["price"], fraction=0.3)
    touched, kept = split(frame, 0.3)
    np.testing.assert_array_equal(out["price"][kept].to_numpy(), frame["price"][kept].to_numpy())
    assert sorted(out["price"][touched]) == sorted(frame["price"][touched])
    assert (out["price"][touched].to_numpy() != frame["price"][touched].to_numpy()).any()


def test_shuffle_is_deterministic_by_seed(frame):
    _, first = run("shuffle", frame, seed=1)
    _, again = run("shuffle", frame, seed=1)
    _, other = run("shuffle", frame, seed=2)
    pd.testing.assert_frame_equal(first, again)
    assert not first["price"].equals(other["price"])


def test_shuffle_of_several_columns_keeps_their_rows_together(frame):
    _, out = run("shuffle", frame, columns=["price", "qty"], fraction=1.0)
    pairs = set(zip(frame["price"], frame["qty"]))
    assert set(zip(out["price"], out["qty"])) == pairs


# --- category_remap -----------------------------------------------------------------------------


def test_category_remap_default_turns_touched_values_into_an_unseen_category(frame):
    _, out = run("category_remap", frame, columns=["city"], fraction=0.5)
    touched, kept = split(frame, 0.5)
    for before, after in zip(frame["city"][touched], out["city"][touched]):
        assert pd.isna(after) if pd.isna(before) else after == UNSEEN_CATEGORY  # pandas 3 keeps NaN, 2 None
    assert out["city"][kept].tolist() == frame["city"][kept].tolist()
    assert UNSEEN_CATEGORY not in set(frame["city"])


def test_category_remap_maps_old_to_new_and_leaves_other_values(frame):
    _, out = run("category_remap:paris=PAR,lyon=LYS", frame, columns=["city"], fraction=1.0)
    expected = [{"paris": "PAR", "lyon": "LYS"}.get(v, v) for v in frame["city"]]
    assert out["city"].tolist() == expected
    assert "PAR" in set(out["city"]) and "nice" in set(out["city"])


def test_category_remap_of_numbers_without_a_mapping_is_a_mutation_error(frame):
    with pytest.raises(MutationError, match="category_remap:OLD=NEW"):
        run("category_remap", frame, columns=["qty"])


def test_category_remap_of_numeric_codes_with_a_mapping():
    codes = pd.DataFrame({"code": [1, 2, 3, 1, 2]})
    out = apply(parse_mutation("category_remap:1=10,3=30"), codes, ["code"], 0)
    assert out["code"].tolist() == [10, 2, 30, 10, 2]


def test_category_remap_with_a_malformed_pair_is_a_config_error(frame):
    with pytest.raises(ConfigError, match="OLD=NEW"):
        run("category_remap:paris", frame, columns=["city"])


# --- timezone_shift -----------------------------------------------------------------------------


def test_timezone_shift_moves_touched_timestamps_by_one_hour_by_default(frame):
    _, out = run("timezone_shift", frame, columns=["ts"], fraction=0.5)
    touched, kept = split(frame, 0.5)
    assert ((out["ts"][touched] - frame["ts"][touched]) == pd.Timedelta(hours=1)).all()
    assert (out["ts"][kept] == frame["ts"][kept]).all()
    assert pd.api.types.is_datetime64_any_dtype(out["ts"])


def test_timezone_shift_by_negative_hours_on_timestamps(frame):
    _, out = run("timezone_shift:-3", frame, columns=["ts"], fraction=1.0)
    assert ((out["ts"] - frame["ts"]) == pd.Timedelta(hours=-3)).all()


def test_timezone_shift_of_an_hour_of_day_wraps_around_the_clock():
    hours = pd.DataFrame({"hour": [0, 5, 22, 23]})
    assert apply(parse_mutation("timezone_shift"), hours, ["hour"], 0)["hour"].tolist() == [1, 6, 23, 0]
    assert apply(parse_mutation("timezone_shift:-1"), hours, ["hour"], 0)["hour"].tolist() == [23, 4, 21, 22]
    assert apply(parse_mutation("timezone_shift:26"), hours, ["hour"], 0)["hour"].tolist() == [2, 7, 0, 1]


def test_timezone_shift_of_an_hour_of_day_stays_in_range(frame):
    _, out = run("timezone_shift:5", frame, columns=["hour"], fraction=1.0)
    assert out["hour"].between(0, 23).all()
    np.testing.assert_array_equal(out["hour"].to_numpy(), (frame["hour"].to_numpy() + 5) % 24)


def test_timezone_shift_of_prices_is_a_mutation_error(frame):
    with pytest.raises(MutationError, match="timezone_shift"):
        run("timezone_shift", frame, columns=["price"])
    with pytest.raises(MutationError):
        run("timezone_shift", frame, columns=["qty"])  # integers, but not an hour of day (up to 49)
    with pytest.raises(MutationError):
        run("timezone_shift", frame, columns=["city"])


# --- type_coercion ------------------------------------------------------------------------------


def test_type_coercion_turns_touched_numbers_into_strings_that_parse_back(frame):
    _, out = run("type_coercion", frame, columns=["price", "qty"], fraction=0.5)
    touched, kept = split(frame, 0.5)
    for column in ("price", "qty"):
        after = out[column][touched]
        assert all(isinstance(v, str) for v in after)
        np.testing.assert_allclose([float(v) for v in after], frame[column][touched].to_numpy())
        assert not any(isinstance(v, str) for v in out[column][kept])
        np.testing.assert_allclose(out[column][kept].astype(float), frame[column][kept])


def test_type_coercion_leaves_missing_values_missing():
    with_gaps = pd.DataFrame({"x": [1.5, np.nan, 3.0]})
    out = apply(parse_mutation("type_coercion"), with_gaps, ["x"], 0)
    assert out["x"][0] == "1.5" and out["x"][2] == "3.0"
    assert pd.isna(out["x"][1]) and not isinstance(out["x"][1], str)


def test_type_coercion_of_text_is_a_mutation_error(frame):
    with pytest.raises(MutationError):
        run("type_coercion", frame, columns=["city"])


# --- drop ---------------------------------------------------------------------------------------


def test_drop_removes_the_column_and_nothing_else(frame):
    _, out = run("drop", frame, columns=["price", "city"])
    assert list(out.columns) == ["qty", "hour", "ts"]
    pd.testing.assert_frame_equal(out, frame.drop(columns=["price", "city"]))


# --- apply --------------------------------------------------------------------------------------

NUMERIC_SPECS = ["null_fraction", "scale", "shift", "clip", "constant", "shuffle", "type_coercion", "drop"]


@pytest.mark.parametrize(
    "spec, column",
    [(s, "price") for s in NUMERIC_SPECS]
    + [("category_remap", "city"), ("timezone_shift", "ts"), ("timezone_shift", "hour"), ("null_fraction", "city")],
)
def test_apply_never_mutates_the_input_frame(frame, spec, column):
    before = frame.copy(deep=True)
    out = apply(parse_mutation(spec, 0.5), frame, [column], SEED)
    pd.testing.assert_frame_equal(frame, before)
    assert out is not frame
    if spec != "drop":
        assert not out[column].equals(frame[column])  # the mutation did change the copy


@pytest.mark.parametrize("spec", NUMERIC_SPECS)
def test_apply_with_the_same_seed_gives_the_same_frame(frame, spec):
    a = apply(parse_mutation(spec, 0.3), frame, ["price"], 99)
    b = apply(parse_mutation(spec, 0.3), frame, ["price"], 99)
    pd.testing.assert_frame_equal(a, b)


def test_apply_with_another_seed_touches_other_rows(frame):
    a = apply(parse_mutation("null_fraction:0.3"), frame, ["price"], 1)
    b = apply(parse_mutation("null_fraction:0.3"), frame, ["price"], 2)
    assert a["price"].isna().sum() == b["price"].isna().sum()
    assert not np.array_equal(a["price"].isna().to_numpy(), b["price"].isna().to_numpy())


def test_apply_changes_every_named_column_on_the_same_rows(frame):
    out = apply(parse_mutation("null_fraction:0.25"), frame, ["price", "qty"], 5)
    assert np.array_equal(out["price"].isna().to_numpy(), out["qty"].isna().to_numpy())
    assert out["price"].isna().sum() == round(0.25 * N)


# --- parse_mutation -----------------------------------------------------------------------------


def test_parse_mutation_rejects_an_unknown_op_naming_the_allowlist():
    with pytest.raises(ConfigError) as err:
        parse_mutation("explode:3")
    message = str(err.value)
    assert "'explode'" in message
    for op in OPERATORS:
        assert op in message


@pytest.mark.parametrize("fraction", [-0.1, 1.01, 2.0, float("nan")])
def test_parse_mutation_rejects_a_fraction_outside_zero_one(fraction):
    with pytest.raises(ConfigError, match="--fraction"):
        parse_mutation("scale", fraction)


@pytest.mark.parametrize("spec", ["null_fraction:1.5", "null_fraction:-0.2"])
def test_parse_mutation_rejects_a_null_share_outside_zero_one(spec):
    with pytest.raises(ConfigError, match=r"\[0, 1\]"):
        parse_mutation(spec)


def test_parse_mutation_rejects_a_null_share_that_disagrees_with_fraction():
    with pytest.raises(ConfigError, match="disagree"):
        parse_mutation("null_fraction:0.3", 0.5)
    assert parse_mutation("null_fraction:0.3", 0.3).fraction == 0.3


def test_parse_mutation_reads_op_arg_and_fraction():
    assert parse_mutation("  clip:1,5 ", 0.2) == Mutation("clip", "1,5", 0.2)
    assert parse_mutation("scale") == Mutation("scale", None, 1.0)
    assert parse_mutation("shift:2", 0).fraction == 0.0
    assert parse_mutation("clip:1,5").label == "clip:1,5"
    assert parse_mutation("drop").label == "drop"
    assert parse_mutation("null_fraction:0.3") == Mutation("null_fraction", "0.3", 0.3)


def test_parse_mutation_rejects_a_null_share_that_is_not_a_number():
    with pytest.raises(ConfigError, match="not a number"):
        parse_mutation("null_fraction:half")


def test_category_remap_ignores_spaces_around_pairs() -> None:
    values = pd.Series(["A", "B", "C"], name="segment")
    out = category_remap(values, np.arange(3), "A=X, C = Z", np.random.default_rng(0))
    assert list(out) == ["X", "B", "Z"]


def test_null_fraction_keeps_a_timestamp_column_a_timestamp() -> None:
    values = pd.Series(pd.date_range("2026-01-01", periods=4, freq="h"), name="occurred_at")
    out = null_fraction(values, np.array([1]), None, np.random.default_rng(0))
    assert pd.api.types.is_datetime64_any_dtype(out) and out.isna().tolist() == [False, True, False, False]


def test_the_allowlist_names_exactly_the_operators_implemented() -> None:
    assert tuple(OPERATORS) == MUTATIONS
