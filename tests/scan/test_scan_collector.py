"""A scan pauses Python's cycle collector for itself only: the caller's process gets it back as it was."""

from __future__ import annotations

import gc

import pytest

from recall_dagster.collector import paused, while_paused


def test_the_collector_comes_back_as_it_was_after_work_and_after_a_failure() -> None:
    @while_paused
    def work() -> bool:
        return gc.isenabled()

    @while_paused
    def failing() -> None:
        raise ValueError("bad estate")

    assert gc.isenabled()
    assert work() is False
    assert gc.isenabled()
    with pytest.raises(ValueError, match="bad estate"):
        failing()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            work()
        assert not gc.isenabled(), "a caller that paused it keeps it paused"
    finally:
        gc.enable()
