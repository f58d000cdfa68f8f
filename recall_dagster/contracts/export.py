"""Every contract by the command it answers, and its JSON Schema as exported to the repository's ``schemas/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from recall_dagster.contracts.acks import Ack, AckList
from recall_dagster.contracts.lifecycle import BlindWindow, Gate, IncidentList, IncidentSync, Rollback
from recall_dagster.contracts.records import Diagnosis, EvidencePack, Impact, Protect
from recall_dagster.contracts.scan import Scan
from recall_dagster.contracts.verify import Verification

CONTRACTS: dict[str, type[BaseModel]] = {
    "scan": Scan,
    "gate": Gate,
    "blind-window": BlindWindow,
    "incidents-sync": IncidentSync,
    "incidents-list": IncidentList,
    "impact": Impact,
    "diagnose": Diagnosis,
    "protect": Protect,
    "evidence": EvidencePack,
    "rollback": Rollback,
    "ack": Ack,
    "ack-list": AckList,
    "verify": Verification,
}


def schema_of(name: str) -> dict[str, Any]:
    """The JSON Schema of one command's output, as exported to ``schemas/<name>.schema.json``."""
    model = CONTRACTS[name]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": f"recall/{name}.schema.json",
            **model.model_json_schema()}


def export(directory: Path) -> list[Path]:
    """Write every contract's JSON Schema under ``directory``; the same models always write the same bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in CONTRACTS:
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema_of(name), indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
