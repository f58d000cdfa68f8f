"""Fixtures shared by the graph tests."""

from __future__ import annotations

import pytest
from graph_estate import Estate, make_estate


@pytest.fixture
def estate() -> Estate:
    return make_estate()
