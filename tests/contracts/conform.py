"""One check every test of a ``--json`` output can call: the output is what its published schema promises."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import ValidationError

from recall_dagster.contracts.export import CONTRACTS

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def conforms(name: str, payload: Any) -> None:
    """``payload`` (a command's parsed JSON) validates against ``schemas/<name>.schema.json``, which admits fields
    it does not name, and against the contract's model, which refuses them."""
    errors = sorted(_validator(name).iter_errors(payload), key=lambda e: list(e.path))
    assert not errors, f"{name}: " + "; ".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5])
    try:
        CONTRACTS[name].model_validate(payload)
    except ValidationError as err:  # a field the contract does not name is an extra_forbidden error
        raise AssertionError(f"{name} does not keep to its contract: {err}") from None
