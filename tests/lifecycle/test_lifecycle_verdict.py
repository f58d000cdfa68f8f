"""CONTAMINATED / CLEAN / UNKNOWN, and the rollback target, on hand-made training runs and windows."""

from __future__ import annotations

from datahub.metadata.schema_classes import (
    DataProcessInstanceRunEventClass,
    DataProcessRunStatusClass,
    MLMetricClass,
    MLTrainingRunPropertiesClass,
)
from lifecycle_estates import at, span_for

from recall_dagster.lifecycle.read import training_span
from recall_dagster.lifecycle.records import AssertionRun, TrainingSpan
from recall_dagster.lifecycle.verdict import Status, Verdict, VersionVerdict, judge, newest_first, rollback_target
from recall_dagster.lifecycle.window import BlindWindow, blind_windows
from recall_dagster.instants import iso_instant

POISONED = ("warehouse.marts.fct_transactions.unit_price",)


def window(*pairs: tuple[float | None, str], writes: tuple[float, ...] = (),
           changed: float | None = None) -> tuple[BlindWindow, ...]:
    history = [AssertionRun(at(h) if h is not None else None, r) for h, r in reversed(pairs)]
    return blind_windows(history, lambda r: r == "FAILURE", [at(w) for w in writes],
                         at(changed) if changed is not None else None)


HEALED = window((0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS"), writes=(9, 19))
OPEN = window((0, "SUCCESS"), (10, "FAILURE"), writes=(9,))


def test_training_inside_the_window_is_contaminated() -> None:
    assert judge((span_for(12, 13),), HEALED, POISONED).status is Status.CONTAMINATED
    assert judge((span_for(12, 13),), OPEN, POISONED).status is Status.CONTAMINATED
    assert "still fails" in judge((span_for(12, 13),), OPEN, POISONED).reason


def test_training_before_the_first_write_after_the_pass_is_clean() -> None:
    verdict = judge((span_for(2, 5),), HEALED, POISONED)
    assert verdict.status is Status.CLEAN and "before" in verdict.reason


def test_training_before_a_stamped_newest_change_is_suspect_naming_it() -> None:
    """Only the table's newest change is stamped (lastModified at hour 9): the bad rows most likely came then, but
    an earlier write the stamp hides could have brought them sooner: neither convicted nor cleared."""
    stamped = window((0, "SUCCESS"), (10, "FAILURE"), changed=9)
    verdict = judge((span_for(2, 5),), stamped, POISONED)
    assert verdict.status is Status.SUSPECT
    assert f"before the table's newest change at {iso_instant(at(9))}" in verdict.reason
    assert f"after the last passing run at {iso_instant(at(0))}" in verdict.reason
    assert judge((span_for(9.5, 9.8),), stamped, POISONED).status is Status.CONTAMINATED


def test_training_before_the_last_passing_run_is_clean() -> None:
    verdict = judge((span_for(-3, -1),), HEALED, POISONED)
    assert verdict.status is Status.CLEAN and "before the corruption could have begun" in verdict.reason
    unbounded = window((0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS"))
    assert judge((span_for(2, 5),), unbounded, POISONED).status is Status.CONTAMINATED, "no write: the pass bounds it"


def test_training_after_the_heal_is_clean_and_an_open_window_never_ends() -> None:
    assert judge((span_for(21, 22),), HEALED, POISONED).status is Status.CLEAN
    assert judge((span_for(21, 22),), OPEN, POISONED).status is Status.CONTAMINATED


def test_training_between_the_last_write_and_the_passing_run_is_clean() -> None:
    assert judge((span_for(19.5, 19.8),), HEALED, POISONED).status is Status.CLEAN


def test_a_version_that_reads_no_poisoned_column_is_clean_whenever_it_trained() -> None:
    assert judge((span_for(12, 13),), OPEN, ()).status is Status.CLEAN


def test_missing_times_are_reasoned_about_not_guessed() -> None:
    assert judge((), OPEN, POISONED).status is Status.UNKNOWN
    assert judge((span_for(None, None),), OPEN, POISONED).status is Status.UNKNOWN
    assert judge((span_for(5, None),), HEALED, POISONED).status is Status.UNKNOWN, "may have run into the window"
    assert judge((span_for(12, None),), OPEN, POISONED).status is Status.CONTAMINATED, "started inside it"
    assert judge((span_for(None, -1),), HEALED, POISONED).status is Status.CLEAN, "ended before it could begin"
    assert judge((span_for(None, 25),), HEALED, POISONED).status is Status.UNKNOWN, "may have begun inside it"


def test_no_pass_before_the_failures_makes_earlier_training_unknown() -> None:
    unbounded = window((10, "FAILURE"), (20, "SUCCESS"))
    verdict = judge((span_for(2, 3),), unbounded, POISONED)
    assert verdict.status is Status.UNKNOWN and "no passing run" in verdict.reason
    assert judge((span_for(12, 13),), unbounded, POISONED).status is Status.CONTAMINATED


def test_untimed_failures_leave_every_version_unknown() -> None:
    assert judge((span_for(2, 3),), window((0, "SUCCESS"), (None, "FAILURE")), POISONED).status is Status.UNKNOWN


def test_the_worst_window_wins() -> None:
    two = window((0, "SUCCESS"), (1, "FAILURE"), (2, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS"), writes=(0.5, 1.8, 9, 19))
    assert judge((span_for(1.2, 1.5),), two, POISONED).status is Status.CONTAMINATED
    assert judge((span_for(1.9, 1.95),), two, POISONED).status is Status.CLEAN, "after one window, before the other"
    assert judge((span_for(5, 6),), two, POISONED).status is Status.CLEAN, "after the pass, before the write at 9"


def run(name: str, start: float | None, end: float | None) -> TrainingSpan:
    span = span_for(start, end)
    return TrainingSpan(f"urn:li:dataProcessInstance:{name}", span.start_ms, span.end_ms)


def test_every_training_run_of_a_version_is_judged_and_the_worst_decides() -> None:
    """A version fit before the failure and fine-tuned inside it read bad data on its second run."""
    verdict = judge((run("fit", -3, -2), run("finetune", 12, 13)), HEALED, POISONED)
    assert verdict.status is Status.CONTAMINATED and verdict.reason.startswith("run finetune of 2:")
    assert judge((run("fit", -3, -2), run("refit", 21, 22)), HEALED, POISONED).status is Status.CLEAN
    untimed = judge((run("fit", 2, 3), run("lost", None, None)), HEALED, POISONED)
    assert untimed.status is Status.UNKNOWN and "run lost of 2: its training run records neither" in untimed.reason


def test_a_version_shows_the_run_it_was_last_fit_on_and_lists_them_all() -> None:
    runs = (run("fit", -3, -2), run("finetune", 21, 22), run("lost", None, None))
    version = VersionVerdict("urn:li:mlModel:m", "m", "1", judge(runs, HEALED, POISONED), runs)
    shown = version.contract().as_json()
    assert shown["training_run"] == "urn:li:dataProcessInstance:finetune" and shown["verdict"] == "UNKNOWN"
    assert shown["training_runs"] == [r.run for r in runs]


def _version(n: int, status: Status) -> VersionVerdict:
    return VersionVerdict(f"urn:li:mlModel:m_{n}", f"m_{n}", str(n), Verdict(status, ""), (span_for(n, n + 1),))


def test_rollback_is_the_newest_clean_version_and_none_without_one() -> None:
    versions = [_version(1, Status.CLEAN), _version(3, Status.CONTAMINATED), _version(2, Status.CLEAN), _version(10, Status.UNKNOWN)]
    assert [v.version for v in newest_first(versions)] == ["10", "3", "2", "1"], "numeric, not lexical, order"
    target = rollback_target(versions)
    assert target is not None and target.name == "m_2"
    assert rollback_target([_version(1, Status.CONTAMINATED), _version(2, Status.UNKNOWN)]) is None


def test_a_training_span_is_read_from_whatever_the_run_recorded() -> None:
    complete = DataProcessInstanceRunEventClass(
        timestampMillis=at(3), status=DataProcessRunStatusClass.COMPLETE, durationMillis=at(3) - at(1)
    )
    metrics = MLTrainingRunPropertiesClass(
        trainingMetrics=[MLMetricClass("table_rows.marts.fct_transactions", value="1000.0"), MLMetricClass("roc_auc", value="0.9")]
    )
    span = training_span("run", {MLTrainingRunPropertiesClass.ASPECT_NAME: metrics}, [complete], "table_rows.")
    assert (span.start_ms, span.end_ms) == (at(1), at(3)), "no start recorded: end minus duration"
    assert span.table_rows == {"marts.fct_transactions": 1000}
    started = DataProcessInstanceRunEventClass(timestampMillis=at(2), status=DataProcessRunStatusClass.STARTED)
    running = training_span("run", {}, [started], "table_rows.")
    assert (running.start_ms, running.end_ms) == (at(2), None)
    nonsense = MLTrainingRunPropertiesClass(trainingMetrics=[
        MLMetricClass(f"table_rows.marts.t{i}", value=v) for i, v in enumerate(("1e400", "inf", "NaN", "-3", "many"))
    ])
    assert training_span("run", {MLTrainingRunPropertiesClass.ASPECT_NAME: nonsense}, [], "table_rows.").table_rows == {}, (
        "a count that is no count is left out, not a crash")
    empty = training_span("run", {}, [], "table_rows.")
    assert (empty.start_ms, empty.end_ms, empty.table_rows) == (None, None, {})
