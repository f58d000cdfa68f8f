"""A quiet, strict run: a warning Recall's own code raises fails the test that triggers it."""

from __future__ import annotations

import warnings

import pytest


@pytest.mark.parametrize("module", ["recall_dagster.scan", "seed.lifecycle", "ml_models.train"])
def test_a_warning_from_the_project_s_own_code_is_an_error(module: str) -> None:
    with pytest.raises(DeprecationWarning, match="stale call"):
        warnings.warn_explicit("stale call", DeprecationWarning, f"{module.replace('.', '/')}.py", 1, module=module)


def test_a_third_party_warning_stays_a_warning() -> None:
    with pytest.warns(UserWarning, match="library noise"):
        warnings.warn_explicit("library noise", UserWarning, "somelib/x.py", 1, module="somelib.x")
