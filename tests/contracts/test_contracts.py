"""The published JSON Schemas are the contracts' own, and each command's real output on an estate written in
DataHub's source shapes keeps to them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    EditableSchemaFieldInfoClass,
    EditableSchemaMetadataClass,
    GlobalTagsClass,
    TagAssociationClass,
)
from pydantic import ValidationError

from recall_dagster.cli import cli
from recall_dagster.contracts.export import CONTRACTS, export
from recall_dagster.contracts.scan import Finding
from recall_dagster.severity import Severity
from tests.contracts.conform import SCHEMAS, conforms
from tests.foreign.foreign_estate import FIXTURES, OVERLAY, fail_the_test
from tests.scan.scan_estates import ingest
from recall_dagster.cli.options import opened_graph
from recall_dagster.settings import Settings

ORDERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.marts.customer_orders,PROD)"


def test_the_schemas_in_the_repository_are_exported_from_the_contracts(tmp_path: Path) -> None:
    export(tmp_path)
    for name in CONTRACTS:
        ours = (SCHEMAS / f"{name}.schema.json").read_text()
        assert ours == (tmp_path / f"{name}.schema.json").read_text(), (
            f"schemas/{name}.schema.json is stale: run python -m recall_dagster.contracts schemas")
    assert {p.name for p in SCHEMAS.iterdir()} == {f"{n}.schema.json" for n in CONTRACTS}


def test_every_contract_carries_its_schema_version() -> None:
    for name in CONTRACTS:
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
        assert "schema_version" in schema["required"] and schema["properties"]["schema_version"]["const"] == 1


def test_recall_s_own_models_refuse_a_field_the_contract_does_not_name_and_its_schemas_admit_one() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Finding(detector="schema_drift", severity=Severity.WARN, subject="urn:li:dataset:x", message="retyped",
                evidence={"path": []}, cause=None, acknowledged=None, fixed_by="nobody")
    for name in CONTRACTS:
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
        parts = [schema, *schema.get("$defs", {}).values()]
        assert all(p["additionalProperties"] is True for p in parts if "properties" in p), name


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Settings, str]:
    db = ingest(tmp_path / "shop.db", str(FIXTURES / "estate_stock.json"))
    overlay = tmp_path / "recall.yaml"
    overlay.write_text(yaml.safe_dump(OVERLAY))
    return Settings(home=tmp_path / "home", graph=str(db)), str(overlay)


def run(shop: tuple[Settings, str], *args: str, configured: bool = True) -> dict:
    settings, overlay = shop
    done = CliRunner().invoke(cli, [*args, "--json", "--graph", settings.graph, *(["--config", overlay] * configured)],
                              env={"RECALL_HOME": str(settings.home)})
    assert done.exit_code in (0, 1, 4), done.output
    return json.loads(done.output)


def test_the_lifecycle_and_scan_outputs_keep_to_their_contracts(shop: tuple[Settings, str]) -> None:
    fail_the_test(shop[0])
    conforms("scan", run(shop, "scan"))
    conforms("gate", run(shop, "gate", "churn_model"))
    window = run(shop, "blind-window")
    assert window["causes"], "a failing test gives the blind window something to say"
    conforms("blind-window", window)
    synced = run(shop, "incidents", "sync")
    assert synced["raised"]
    conforms("incidents-sync", synced)
    listed = run(shop, "incidents", "list", configured=False)
    assert listed["incidents"]
    conforms("incidents-list", listed)
    conforms("protect", run(shop, "protect"))
    conforms("evidence", run(shop, "evidence", "--model", "churn_model", "--no-write"))


def test_an_evidence_pack_naming_personal_data_keeps_to_its_contract(shop: tuple[Settings, str]) -> None:
    """The pack's personal data is where a contract and its output once parted: the schema said objects, the pack
    wrote names, and a shop holding no personal data never showed it."""
    settings, _ = shop
    tagged = EditableSchemaMetadataClass(editableSchemaFieldInfo=[
        EditableSchemaFieldInfoClass(fieldPath="customer_id", globalTags=GlobalTagsClass([TagAssociationClass("urn:li:tag:pii")]))])
    with opened_graph(settings, read_only=False) as graph:
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=ORDERS, aspect=tagged)])
    pack = run(shop, "evidence", "--model", "churn_model", "--no-write")
    assert pack["personal_data"]["columns"] == ["shop.marts.customer_orders.customer_id"]
    conforms("evidence", pack)
