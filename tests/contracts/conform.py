"""One check every test of a ``--json`` output can call: the output is what its published schema promises."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import BaseModel

from recall_dagster.contracts.export import CONTRACTS

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def _unnamed(model: BaseModel, where: str) -> list[str]:
    """Fields Recall's own output carries that its contract does not name: each is a silent contract change."""
    found = [f"{where}.{k}" for k in (model.model_extra or {})]
    for field, value in model:
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            if isinstance(item, BaseModel):
                found += _unnamed(item, f"{where}.{field}" + (f"[{i}]" if isinstance(value, list) else ""))
    return found


def conforms(name: str, payload: Any) -> None:
    """``payload`` (a command's parsed JSON) validates against ``schemas/<name>.schema.json`` and names no field
    the contract leaves out."""
    errors = sorted(_validator(name).iter_errors(payload), key=lambda e: list(e.path))
    assert not errors, f"{name}: " + "; ".join(f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5])
    unnamed = _unnamed(CONTRACTS[name].model_validate(payload), name)
    assert not unnamed, f"{name} carries fields its contract does not name: {unnamed[:10]}"
