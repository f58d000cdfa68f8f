"""Blind-window bounds from hand-made run histories."""

from __future__ import annotations

from dataclasses import replace

from lifecycle_estates import FCT, FCT_PG, at, closure, datasets, estate

from recall_dagster.lifecycle.read import _last_change, _writes
from recall_dagster.lifecycle.records import AssertionRun
from recall_dagster.lifecycle.window import blind_windows, hull


def failing(result: str | None) -> bool:
    return result == "FAILURE"


def runs(*pairs: tuple[float | None, str]) -> list[AssertionRun]:
    """Newest first, as the graph serves them."""
    return [AssertionRun(at(h) if h is not None else None, r) for h, r in reversed(pairs)]


def test_bounds_come_from_the_last_pass_and_the_first_pass_after() -> None:
    (window,) = blind_windows(runs((0, "SUCCESS"), (10, "FAILURE"), (11, "FAILURE"), (20, "SUCCESS")), failing)
    assert (window.began_after_ms, window.began_by_ms) == (at(0), at(10))
    assert (window.last_failed_ms, window.ended_by_ms) == (at(11), at(20))
    assert (window.onset_ms, window.end_ms) == (at(0), at(20)), "without writes the runs are the bounds"
    assert not window.open


def test_writes_to_a_materialised_table_tighten_both_bounds() -> None:
    history = runs((0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS"))
    (window,) = blind_windows(history, failing, writes_ms=[at(-1), at(4), at(9), at(12), at(19), at(25)])
    assert window.onset_ms == at(4), "the corruption cannot predate the first write after the pass"
    assert window.end_ms == at(19), "nor outlast the last write before the heal"


def test_a_window_still_failing_is_open() -> None:
    (window,) = blind_windows(runs((0, "SUCCESS"), (10, "FAILURE"), (12, "FAILURE")), failing)
    assert window.open and window.ended_by_ms is None and window.end_ms is None
    assert window.last_failed_ms == at(12)


def test_no_pass_before_the_failures_leaves_the_onset_unbounded() -> None:
    (window,) = blind_windows(runs((10, "FAILURE"), (20, "SUCCESS")), failing, writes_ms=[at(5)])
    assert window.began_after_ms is None and window.onset_ms is None
    assert window.began_by_ms == at(10)


def test_runs_without_a_time_bound_nothing_and_are_counted() -> None:
    history = runs((0, "SUCCESS"), (None, "SUCCESS"), (10, "FAILURE"), (None, "FAILURE"), (20, "SUCCESS"))
    (window,) = blind_windows(history, failing)
    assert (window.began_after_ms, window.began_by_ms, window.ended_by_ms) == (at(0), at(10), at(20))
    assert window.untimed_runs == 2


def test_failures_that_all_lack_a_time_still_make_a_window_with_unknown_bounds() -> None:
    (window,) = blind_windows(runs((0, "SUCCESS"), (None, "FAILURE")), failing)
    assert window.began_by_ms is None and window.onset_ms is None and window.open


def test_an_errored_run_neither_passes_nor_fails() -> None:
    (window,) = blind_windows(runs((0, "SUCCESS"), (5, "ERROR"), (10, "FAILURE"), (15, "ERROR"), (20, "SUCCESS")), failing)
    assert (window.began_after_ms, window.began_by_ms, window.ended_by_ms) == (at(0), at(10), at(20))


def test_every_streak_is_a_window_and_a_clean_history_none() -> None:
    history = runs((0, "SUCCESS"), (1, "FAILURE"), (2, "SUCCESS"), (3, "FAILURE"), (4, "FAILURE"))
    first, second = blind_windows(history, failing)
    assert (first.began_by_ms, first.ended_by_ms) == (at(1), at(2))
    assert (second.began_after_ms, second.began_by_ms) == (at(2), at(3)) and second.open
    assert blind_windows(runs((0, "SUCCESS"), (1, "SUCCESS")), failing) == ()


def test_the_hull_of_several_tests_is_open_while_any_is() -> None:
    (healed,) = blind_windows(runs((0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS")), failing)
    (still,) = blind_windows(runs((2, "SUCCESS"), (11, "FAILURE")), failing)
    both = hull([healed, still])
    assert both is not None
    assert (both.onset_ms, both.began_by_ms, both.last_failed_ms) == (at(0), at(10), at(11))
    assert both.open
    assert hull([]) is None


def test_a_stock_estate_s_builds_are_writes_and_its_source_freshness_the_newest_change() -> None:
    """Without operation aspects, a dbt model's builds (run_results.json) list when it was written; the last change
    dbt source freshness or the platform saw, on any twin of the table, stamps only the newest write."""
    views = datasets()
    views[FCT] = replace(views[FCT], operations_ms=(), builds_ms=(at(12), at(4)))
    views[FCT_PG] = replace(views[FCT_PG], operations_ms=(), last_modified_ms=at(9))
    world = estate([closure(1, views=views)])
    assert (_writes(world, FCT_PG), _last_change(world, FCT_PG)) == ((at(4), at(12)), at(9))


def test_a_stamped_newest_change_after_the_pass_is_the_likely_onset_not_a_bound() -> None:
    (window,) = blind_windows(runs((0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS")), failing, (), at(9))
    assert (window.onset_ms, window.likely_onset_ms) == (at(0), at(9)), "an earlier write could hide behind it"
    (bounded,) = blind_windows(runs((0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS")), failing, (at(4),), at(9))
    assert (bounded.onset_ms, bounded.likely_onset_ms) == (at(4), None), "a listed write bounds it"
    (healed,) = blind_windows(runs((0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS")), failing, (), at(15))
    assert healed.end_ms == at(15), "the newest change is the last write: the fix came by then"
