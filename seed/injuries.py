"""A normal Tuesday, inflicted on the estate: each injury on the system it belongs to.

Warehouse injuries are Postgres DDL and data changes; metadata injuries are the
edits a person (or an HR sync, or a classifier) would make in DataHub; the
feature store's half-finished migration is an edit to the registry Feast serves
from (the fraud view's export then reads one feature from the v2 mart).
``heal`` undoes each of them the same way, so the system stands down by itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import psycopg2
import yaml
from datahub.emitter import mce_builder as builder
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata import schema_classes as m

from ml_models.registry import DEFAULT_REGISTRY_PATH, FeatureRegistry, load_registry
from recall_dagster.errors import StackError
from recall_dagster.graph import open_graph
from seed.ingest.enrich import table_urn
from recall_dagster.settings import Settings
from seed.stack.warehouse import Warehouse

RETYPED = ("transactions", "occurred_at", "timestamp without time zone")  # the loader dropped the time zone
PII_COLUMN = ("transactions", "card_number")
STALE_SOURCE = "customers"
STALE_DAYS = 40
BAD_LOAD_DAYS = 3  # orders placed in the last days lose their price in the bad load
RELOAD_DAYS = 60  # the device vendor's reload in percent covers its last days of rows
IN_CENTS = ("transactions", "amount", 14)  # the processor sends its last days of amounts in cents: same type
DEPARTED_OWNER = "urn:li:corpuser:priya.nair"
MIGRATED_FEATURE = "device_ip_risk_score"  # moved to the v2 feed; its sibling features were not
RETIRED_TABLE, NEW_TABLE = "fct_device_features", "fct_device_features_v2"
PII_TERM = "urn:li:glossaryTerm:PII"


REGRESSED_FEATURE, REGRESSED_TRANSFORM = "device_ip_risk_score", "ip_trust"  # v2 of the feature's code


def serving_registry_path(settings: Settings) -> Path:
    return settings.home / "estate" / "serving" / "feature_registry.yaml"


def training_registry_path(settings: Settings) -> Path:
    return settings.home / "estate" / "training" / "feature_registry.yaml"


def serving_registry(settings: Settings) -> FeatureRegistry:
    """What Feast serves from; equals the training registry until someone migrates it."""
    path = serving_registry_path(settings)
    return load_registry(path) if path.exists() else load_registry()


def training_registry(settings: Settings) -> FeatureRegistry:
    """What training computes features with: the checked-in registry until a scenario changes a feature's code."""
    path = training_registry_path(settings)
    return load_registry(path) if path.exists() else load_registry()


def _edited_registry(target: Path, feature_name: str, edit: Callable[[dict], None]) -> None:
    """The checked-in registry with one feature edited, written (with its ownership file) to ``target``."""
    document = yaml.safe_load(DEFAULT_REGISTRY_PATH.read_text())
    for table in document["feature_tables"]:
        for feature in table["features"]:
            if feature["name"] == feature_name:
                edit(feature)
    target.parent.mkdir(parents=True, exist_ok=True)
    ownership = DEFAULT_REGISTRY_PATH.parent / document["ownership"]
    (target.parent / document["ownership"]).write_text(ownership.read_text())
    target.write_text(yaml.safe_dump(document, sort_keys=False))


def injure_warehouse(warehouse: Warehouse) -> None:
    """Retype a column, add an unclassified card-number column, stop a feed, load NULL prices, and switch
    recent amounts to cents (a unit change only a profile shows)."""
    table, column, new_type = RETYPED
    pii_table, pii_column = PII_COLUMN
    conn = warehouse.connect()
    try:
        with conn, conn.cursor() as cur:
            _injure(cur, table, column, new_type, pii_table, pii_column)
    except psycopg2.Error as err:
        raise StackError(f"could not injure the warehouse at {warehouse.where}: {err}".strip()) from err
    finally:
        conn.close()


def _injure(cur, table: str, column: str, new_type: str, pii_table: str, pii_column: str) -> None:
    # The loader team recreates its table with the new type; dbt's staging view on it goes too.
    cur.execute(f"DROP VIEW IF EXISTS staging.stg_{table} CASCADE")
    cur.execute(f"ALTER TABLE raw.{table} ALTER COLUMN {column} TYPE {new_type}")
    cur.execute(f"ALTER TABLE raw.{pii_table} ADD COLUMN IF NOT EXISTS {pii_column} text")
    cur.execute(
        f"UPDATE raw.{pii_table} SET {pii_column} = '4000' || lpad((transaction_id % 1000000000000)::text, 12, '0')"
        f" WHERE {pii_column} IS NULL"
    )
    cur.execute(
        f"UPDATE raw.{STALE_SOURCE} SET _loaded_at = _loaded_at - interval '{STALE_DAYS} days'"
        f" WHERE (SELECT max(_loaded_at) FROM raw.{STALE_SOURCE}) > now() - interval '{STALE_DAYS - 1} days'"
    )
    cur.execute(
        f"UPDATE raw.orders SET unit_price = NULL"
        f" WHERE ordered_at > (SELECT max(ordered_at) FROM raw.orders) - interval '{BAD_LOAD_DAYS} days'"
    )
    cents_table, cents_column, cents_days = IN_CENTS
    cur.execute(
        f"UPDATE raw.{cents_table} SET {cents_column} = {cents_column} * 100"
        f" WHERE _loaded_at > (SELECT max(_loaded_at) FROM raw.{cents_table}) - interval '{cents_days} days'"
    )


def null_device_risk(warehouse: Warehouse, share: float = 0.02) -> None:
    """A vendor load that lost the IP risk score on a share of its rows (the not-null test on it fails)."""
    conn = warehouse.connect()
    try:
        with conn, conn.cursor() as cur:
            cur.execute(f"UPDATE raw.device_signals SET ip_risk_score = NULL WHERE transaction_id % {round(1 / share)} = 0")
    except psycopg2.Error as err:
        raise StackError(f"could not injure the warehouse at {warehouse.where}: {err}".strip()) from err
    finally:
        conn.close()


def reload_in_percent(warehouse: Warehouse, days: int = RELOAD_DAYS) -> None:
    """The vendor reloads its last ``days`` of rows with the IP risk score in percent; the rows land now."""
    conn = warehouse.connect()
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                "UPDATE raw.device_signals SET ip_risk_score = ip_risk_score * 100, _loaded_at = now()"
                f" WHERE observed_at > (SELECT max(observed_at) FROM raw.device_signals) - interval '{days} days'"
            )
    except psycopg2.Error as err:
        raise StackError(f"could not injure the warehouse at {warehouse.where}: {err}".strip()) from err
    finally:
        conn.close()


def migrate_serving_registry(settings: Settings) -> None:
    """The half-finished v1 → v2 migration: one device feature now served from the v2 feed."""
    _edited_registry(serving_registry_path(settings), MIGRATED_FEATURE, lambda f: f["source"].update(model=NEW_TABLE))


def restore_serving_registry(settings: Settings) -> None:
    serving_registry_path(settings).unlink(missing_ok=True)


def change_feature_code(settings: Settings) -> None:
    """The regression: training computes the IP risk feature with the v2 transform, whose division has no
    zero guard (risks under half a point become infinite trust, and the scaling then flattens the feature)."""
    _edited_registry(training_registry_path(settings), REGRESSED_FEATURE, lambda f: f.update(transform=REGRESSED_TRANSFORM))


def restore_feature_code(settings: Settings) -> None:
    training_registry_path(settings).unlink(missing_ok=True)


def metadata_injuries(registry: FeatureRegistry, hurt: bool) -> list[MetadataChangeProposalWrapper]:
    """What people change in DataHub: v1 retired, an owner suspended, a column classified as PII.

    With ``hurt`` False the same aspects are written back to their healthy values.
    """
    retired = table_urn(registry, RETIRED_TABLE)
    pii_table = f"{registry.warehouse_database}.raw.{PII_COLUMN[0]}"
    deprecation = m.DeprecationClass(
        deprecated=hurt,
        note=f"Retired: the device feed moved to {NEW_TABLE}." if hurt else "",
        actor="urn:li:corpuser:priya.nair",
        replacement=table_urn(registry, NEW_TABLE) if hurt else None,
    )
    stamp = m.AuditStampClass(time=0, actor="urn:li:corpuser:pii-classifier")
    classified = [
        m.EditableSchemaFieldInfoClass(
            fieldPath=PII_COLUMN[1],
            glossaryTerms=m.GlossaryTermsClass(terms=[m.GlossaryTermAssociationClass(urn=PII_TERM)], auditStamp=stamp),
        )
    ] if hurt else []
    return [
        MetadataChangeProposalWrapper(entityUrn=retired, aspect=deprecation),
        MetadataChangeProposalWrapper(
            entityUrn=DEPARTED_OWNER, aspect=m.CorpUserStatusClass(status="SUSPENDED" if hurt else "ACTIVE",
                                                                   lastModified=stamp)
        ),
        MetadataChangeProposalWrapper(  # classified where its schema lives: the dbt source node
            entityUrn=builder.make_dataset_urn("dbt", pii_table, registry.env),
            aspect=m.EditableSchemaMetadataClass(editableSchemaFieldInfo=classified),
        ),
    ]


def write_metadata(settings: Settings, mcps: list[MetadataChangeProposalWrapper]) -> None:
    graph = open_graph(settings)
    try:
        report = graph.emit_mcps(mcps)
    finally:
        graph.close()
    report.raise_if_failed("estate metadata")
