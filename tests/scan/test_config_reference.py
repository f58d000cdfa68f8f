"""The configuration reference is written from the models: it cannot go stale, and no key goes unexplained."""

from __future__ import annotations

import re

from recall_dagster.config.reference import reference
from recall_dagster.settings import REPO_ROOT


def test_the_committed_reference_is_the_one_the_models_write() -> None:
    committed = (REPO_ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert committed == reference(), "run `python -m recall_dagster.config.reference > docs/configuration.md`"


def test_every_key_says_what_it_must_be_and_what_it_means() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| ([^|]*) \| [^|]* \| ([^|]*) \|$", reference(), flags=re.M)
    assert len(rows) > 100, "every key of every section has a row"
    assert [key for key, must, meaning in rows if not must.strip() or not meaning.strip()] == []
    assert ("lifecycle.gate.max_row_drop", "a finite number in [0, 1]") in {(k, m) for k, m, _ in rows}
