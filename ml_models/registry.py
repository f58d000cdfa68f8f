"""The feature registry, parsed and validated into frozen dataclasses.

Training, DataHub ingestion and the detectors all read feature → column → model
wiring from here, so a typo must fail at load time with the file and the entry
named, not surface days later as a missing lineage edge. Nothing about the demo
lives in this module: the yaml files hold the estate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from datahub.metadata.schema_classes import (
    DeploymentStatusClass,
    MLFeatureDataTypeClass,
    OwnershipTypeClass,
)

from ml_models.transforms import TRANSFORMS
from ml_models.yaml_node import YamlNode, read_yaml, reject_duplicates
from recall_dagster.errors import ConfigError

DEFAULT_REGISTRY_PATH = Path(__file__).with_name("feature_registry.yaml")
SUPPORTED_VERSION = 1
TASKS = ("classification", "regression")

# Table, column, feature and alias names are spliced into SQL and URNs: keep them
# to lower-case identifiers, which Postgres and SQLite both accept unquoted.
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")
# Registered-model and deployment names only appear in URNs and MLflow calls.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_DOTTED_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _enum_values(cls: type) -> frozenset[str]:
    """The symbols of a DataHub enum class, so validation follows the installed SDK."""
    return frozenset(v for k, v in vars(cls).items() if k.isupper() and isinstance(v, str))


FEATURE_TYPES = _enum_values(MLFeatureDataTypeClass)
DEPLOYMENT_STATUSES = _enum_values(DeploymentStatusClass)
OWNERSHIP_TYPES = _enum_values(OwnershipTypeClass)


@dataclass(frozen=True)
class Owner:
    id: str  # urn:li:corpuser:… or urn:li:corpGroup:…
    type: str  # a DataHub ownership type, e.g. TECHNICAL_OWNER


@dataclass(frozen=True)
class WarehouseTable:
    """A dbt model the registry reads, with the columns it relies on."""

    name: str
    schema: str
    columns: tuple[str, ...]
    loaded_at: str | None = None  # the column saying when the loader wrote each row: what a cutoff filters on
    owners: tuple[Owner, ...] = ()
    glossary_terms: tuple[str, ...] = ()
    column_terms: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def qualified_name(self) -> str:
        """``schema.table``: what SQL names and what training reports it read."""
        return f"{self.schema}.{self.name}"


@dataclass(frozen=True)
class ColumnRef:
    model: str  # dbt model name, a key of FeatureRegistry.tables
    column: str


@dataclass(frozen=True)
class Feature:
    name: str
    feature_table: str
    source: ColumnRef
    data_type: str  # a DataHub MLFeatureDataType symbol
    description: str
    transform: str | None = None


@dataclass(frozen=True)
class FeatureTable:
    name: str
    platform: str
    description: str
    entity: str
    keys: tuple[str, ...]
    features: tuple[Feature, ...]
    event_time: str | None = None  # column of the first feature's table saying when each row happened
    owners: tuple[Owner, ...] = ()

    @property
    def home(self) -> str:
        """The warehouse table the feature table's rows come from: its first feature's."""
        return self.features[0].source.model


@dataclass(frozen=True)
class Deployment:
    name: str
    platform: str
    environment: str
    status: str  # a DataHub DeploymentStatus symbol
    serves: str  # the registry alias whose version this endpoint serves


@dataclass(frozen=True)
class TrainingSpec:
    test_fraction: float
    random_state: int
    max_rows: int | None = None  # deterministic subsample above this many rows
    split_by: str | None = None  # entity key to hold out the latest rows by; random split if None


@dataclass(frozen=True)
class ModelSpec:
    name: str
    registered_name: str  # name in the MLflow model registry
    description: str
    task: str
    estimator_class: str
    estimator_params: Mapping[str, Any]
    feature_tables: tuple[str, ...]
    keys: tuple[str, ...]  # entity keys shared by its feature tables
    features: tuple[Feature, ...]
    label: ColumnRef
    training: TrainingSpec
    alias: str  # registry alias set on every version training registers
    deployments: tuple[Deployment, ...]
    owners: tuple[Owner, ...]
    glossary_terms: tuple[str, ...]
    properties: Mapping[str, str] = field(default_factory=dict)  # e.g. pii_justification, shown on the model


@dataclass(frozen=True)
class FeatureRegistry:
    path: Path
    env: str
    warehouse_platform: str
    warehouse_database: str
    tables: Mapping[str, WarehouseTable]
    feature_tables: tuple[FeatureTable, ...]
    models: tuple[ModelSpec, ...]

    def table(self, name: str) -> WarehouseTable:
        try:
            return self.tables[name]
        except KeyError:
            raise ConfigError(f"{self.path}: no warehouse table {name!r}") from None

    def model(self, name: str) -> ModelSpec:
        for model in self.models:
            if model.name == name:
                return model
        known = ", ".join(m.name for m in self.models)
        raise ConfigError(f"{self.path}: no model {name!r} (known: {known})")

    def warehouse_name(self, table: WarehouseTable) -> str:
        """``database.schema.table``: how DataHub's Postgres and dbt sources name it."""
        return f"{self.warehouse_database}.{table.qualified_name}"


def load_registry(path: Path | str = DEFAULT_REGISTRY_PATH) -> FeatureRegistry:
    """Read and validate a registry file and the ownership file it points to."""
    path = Path(path)
    top = YamlNode(path, "", read_yaml(path))
    version = top.required("version", int)
    if version != SUPPORTED_VERSION:
        raise top.at("version").error(f"unsupported version {version}; expected {SUPPORTED_VERSION}")
    env = top.required("env", str)
    warehouse = top.child("warehouse")
    platform = warehouse.required("platform", str)
    database = _identifier(warehouse, "database")
    tables = _parse_tables(warehouse.entries("tables"))
    warehouse.finish()
    ownership = top.optional("ownership", str)
    if ownership is not None:
        tables = _apply_ownership(path.parent / ownership, path, tables)
    feature_tables = _parse_feature_tables(top.children("feature_tables"), tables)
    models = _parse_models(top.children("models"), tables, feature_tables)
    top.finish()
    return FeatureRegistry(
        path=path,
        env=env,
        warehouse_platform=platform,
        warehouse_database=database,
        tables=MappingProxyType(tables),
        feature_tables=tuple(feature_tables.values()),
        models=models,
    )


def _identifier(node: YamlNode, key: str) -> str:
    value = node.required(key, str)
    _check(_IDENTIFIER, node.at(key), value, "a lower-case identifier ([a-z_][a-z0-9_]*)")
    return value


def _name(node: YamlNode, key: str) -> str:
    value = node.required(key, str)
    _check(_NAME, node.at(key), value, "a name of letters, digits, '_', '.', '-'")
    return value


def _check(pattern: re.Pattern[str], node: YamlNode, value: str, expected: str) -> None:
    if not pattern.match(value):
        raise node.error(f"{value!r} is not {expected}")


def _one_of(node: YamlNode, key: str, allowed: frozenset[str] | tuple[str, ...]) -> str:
    value = node.required(key, str)
    if value not in allowed:
        raise node.at(key).error(f"{value!r} is not one of {', '.join(sorted(allowed))}")
    return value


def _owners(node: YamlNode) -> tuple[Owner, ...]:
    owners = []
    for entry in _optional_children(node, "owners"):
        owner_id = entry.required("id", str)
        if not owner_id.startswith(("urn:li:corpuser:", "urn:li:corpGroup:")):
            raise entry.at("id").error(f"{owner_id!r} is not a urn:li:corpuser:… or urn:li:corpGroup:… id")
        owners.append(Owner(id=owner_id, type=_one_of(entry, "type", OWNERSHIP_TYPES)))
        entry.finish()
    reject_duplicates(node.at("owners"), [o.id for o in owners])
    return tuple(owners)


def _terms(node: YamlNode) -> tuple[str, ...]:
    terms = node.strings("glossary_terms", required=False)
    for term in terms:
        if not term.startswith("urn:li:glossaryTerm:"):
            raise node.at("glossary_terms").error(f"{term!r} is not a urn:li:glossaryTerm:… id")
    return terms


def _parse_tables(entries: dict[str, YamlNode]) -> dict[str, WarehouseTable]:
    tables = {}
    for name, node in entries.items():
        _check(_IDENTIFIER, node, name, "a lower-case identifier")
        columns = node.strings("columns")
        for column in columns:
            _check(_IDENTIFIER, node.at("columns"), column, "a lower-case identifier")
        loaded_at = node.optional("loaded_at", str)
        if loaded_at is not None:
            _check(_IDENTIFIER, node.at("loaded_at"), loaded_at, "a lower-case identifier")
        tables[name] = WarehouseTable(name=name, schema=_identifier(node, "schema"), columns=columns,
                                      loaded_at=loaded_at)
        node.finish()
    return tables


def _apply_ownership(
    path: Path, registry_path: Path, tables: dict[str, WarehouseTable]
) -> dict[str, WarehouseTable]:
    top = YamlNode(path, "", read_yaml(path))
    owned = dict(tables)
    for name, node in top.entries("datasets").items():
        if name not in tables:
            raise node.error(
                f"unknown warehouse table {name!r}: declare it under warehouse.tables in {registry_path}"
            )
        column_terms = {}
        for column, column_node in node.entries("columns", required=False).items():
            if column not in tables[name].columns:
                raise column_node.error(f"{name} has no column {column!r}")
            column_terms[column] = _terms(column_node)
            column_node.finish()
        owned[name] = WarehouseTable(
            name=name,
            schema=tables[name].schema,
            columns=tables[name].columns,
            loaded_at=tables[name].loaded_at,
            owners=_owners(node),
            glossary_terms=_terms(node),
            column_terms=MappingProxyType(column_terms),
        )
        node.finish()
    top.finish()
    return owned


def _column_ref(node: YamlNode, key: str, tables: Mapping[str, WarehouseTable]) -> ColumnRef:
    ref = node.child(key)
    model, column = ref.required("model", str), ref.required("column", str)
    if model not in tables:
        raise ref.error(f"unknown warehouse table {model!r} (declared: {', '.join(tables)})")
    if column not in tables[model].columns:
        raise ref.error(f"{model} has no column {column!r} (declared: {', '.join(tables[model].columns)})")
    ref.finish()
    return ColumnRef(model=model, column=column)


def _require_keys(node: YamlNode, table: WarehouseTable, keys: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in table.columns]
    if missing:
        raise node.error(f"{table.name} lacks entity key column(s) {', '.join(missing)} needed to join it")


def _parse_feature_tables(
    nodes: list[YamlNode], tables: Mapping[str, WarehouseTable]
) -> dict[str, FeatureTable]:
    parsed: dict[str, FeatureTable] = {}
    for node in nodes:
        name = _identifier(node, "name")
        if name in parsed:
            raise node.error(f"duplicate feature table {name!r}")
        entity = node.child("entity")
        entity_name = _identifier(entity, "name")
        keys = entity.strings("keys")
        entity.finish()
        features: list[Feature] = []
        for feature_node in node.children("features"):
            feature = _parse_feature(feature_node, name, tables)
            if any(f.name == feature.name for f in features):
                raise feature_node.error(f"duplicate feature {feature.name!r} in {name}")
            _require_keys(feature_node, tables[feature.source.model], keys)
            if feature.name in keys:
                raise feature_node.error(f"feature {feature.name!r} shares its name with an entity key of {name}")
            features.append(feature)
        if not features:
            raise node.at("features").error(f"{name} serves no feature")
        event_time = node.optional("event_time", str)
        home = tables[features[0].source.model]
        if event_time is not None and event_time not in home.columns:
            raise node.at("event_time").error(f"{home.name} has no column {event_time!r}")
        parsed[name] = FeatureTable(
            name=name,
            platform=_name(node, "platform"),
            description=node.required("description", str),
            entity=entity_name,
            keys=keys,
            features=tuple(features),
            event_time=event_time,
            owners=_owners(node),
        )
        node.finish()
    return parsed


def _parse_feature(node: YamlNode, table: str, tables: Mapping[str, WarehouseTable]) -> Feature:
    transform = node.optional("transform", str)
    if transform is not None and transform not in TRANSFORMS:
        raise node.at("transform").error(f"unknown transform {transform!r} (known: {', '.join(TRANSFORMS)})")
    feature = Feature(
        name=_identifier(node, "name"),
        feature_table=table,
        source=_column_ref(node, "source", tables),
        data_type=_one_of(node, "type", FEATURE_TYPES),
        description=node.required("description", str),
        transform=transform,
    )
    node.finish()
    return feature


def _parse_models(
    nodes: list[YamlNode],
    tables: Mapping[str, WarehouseTable],
    feature_tables: Mapping[str, FeatureTable],
) -> tuple[ModelSpec, ...]:
    models: list[ModelSpec] = []
    deployment_names: set[str] = set()
    for node in nodes:
        model = _parse_model(node, tables, feature_tables)
        if any(m.name == model.name for m in models):
            raise node.error(f"duplicate model {model.name!r}")
        if any(m.registered_name == model.registered_name for m in models):
            raise node.error(f"registered name {model.registered_name!r} is already used by another model")
        for deployment in model.deployments:
            if deployment.name in deployment_names:
                raise node.at("deployments").error(f"deployment {deployment.name!r} is declared twice")
            deployment_names.add(deployment.name)
        models.append(model)
    return tuple(models)


def _parse_model(
    node: YamlNode,
    tables: Mapping[str, WarehouseTable],
    feature_tables: Mapping[str, FeatureTable],
) -> ModelSpec:
    serving = node.strings("feature_tables")
    for name in serving:
        if name not in feature_tables:
            raise node.at("feature_tables").error(
                f"unknown feature table {name!r} (declared: {', '.join(feature_tables)})"
            )
    keys = feature_tables[serving[0]].keys
    for name in serving[1:]:
        if feature_tables[name].keys != keys:
            raise node.at("feature_tables").error(
                f"{name} is keyed by {feature_tables[name].keys}, {serving[0]} by {keys}: "
                "a model's feature tables must share entity keys to be joined"
            )
    features = _resolve_features(node, [feature_tables[n] for n in serving])
    label = _column_ref(node, "label", tables)
    _require_keys(node.at("label"), tables[label.model], keys)
    for feature in features:
        if feature.source == label:
            raise node.at("features").error(
                f"feature {feature.name!r} reads the label column {label.model}.{label.column}"
            )
    alias = _identifier(node, "alias")
    estimator_class, estimator_params = _parse_estimator(node.child("estimator"))
    model = ModelSpec(
        name=_identifier(node, "name"),
        registered_name=_name(node, "registered_name"),
        description=node.required("description", str),
        task=_one_of(node, "task", TASKS),
        estimator_class=estimator_class,
        estimator_params=estimator_params,
        feature_tables=serving,
        keys=keys,
        features=features,
        label=label,
        training=_parse_training(node.child("training"), keys),
        alias=alias,
        deployments=tuple(_parse_deployment(d, alias) for d in _optional_children(node, "deployments")),
        owners=_owners(node),
        glossary_terms=_terms(node),
        properties=_properties(node),
    )
    node.finish()
    return model


def _properties(node: YamlNode) -> dict[str, str]:
    raw = node.optional("properties", dict) or {}
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise node.at("properties").error(f"{key!r}: properties map names to text")
    return dict(raw)


def _resolve_features(node: YamlNode, serving: list[FeatureTable]) -> tuple[Feature, ...]:
    resolved = []
    for name in node.strings("features"):
        matches = [f for table in serving for f in table.features if f.name == name]
        if not matches:
            offered = ", ".join(f.name for table in serving for f in table.features)
            raise node.at("features").error(f"unknown feature {name!r} (its feature tables define: {offered})")
        if len(matches) > 1:
            owners = ", ".join(f.feature_table for f in matches)
            raise node.at("features").error(f"feature {name!r} is ambiguous: defined by {owners}")
        resolved.append(matches[0])
    return tuple(resolved)


def _parse_estimator(node: YamlNode) -> tuple[str, Mapping[str, Any]]:
    path = node.required("class", str)
    _check(_DOTTED_PATH, node.at("class"), path, "a dotted import path like sklearn.ensemble.X")
    params = MappingProxyType(dict(node.optional("params", dict) or {}))
    node.finish()
    return path, params


def _parse_training(node: YamlNode, keys: tuple[str, ...]) -> TrainingSpec:
    test_fraction = node.required("test_fraction", float)
    if not 0 < test_fraction < 1:
        raise node.at("test_fraction").error(f"must be between 0 and 1, got {test_fraction}")
    max_rows = node.optional("max_rows", int)
    if max_rows is not None and max_rows < 10:
        raise node.at("max_rows").error(f"must be at least 10, got {max_rows}")
    split_by = node.optional("split_by", str)
    if split_by is not None and split_by not in keys:
        raise node.at("split_by").error(f"must be one of the entity keys {', '.join(keys)}, got {split_by!r}")
    spec = TrainingSpec(
        test_fraction=test_fraction,
        random_state=node.required("random_state", int),
        max_rows=max_rows,
        split_by=split_by,
    )
    node.finish()
    return spec


def _optional_children(node: YamlNode, key: str) -> list[YamlNode]:
    return node.children(key) if node.data.get(key) is not None else []


def _parse_deployment(node: YamlNode, alias: str) -> Deployment:
    serves = _identifier(node, "serves")
    if serves != alias:
        raise node.at("serves").error(f"serves alias {serves!r} but training sets alias {alias!r}")
    deployment = Deployment(
        name=_name(node, "name"),
        platform=_name(node, "platform"),
        environment=node.required("environment", str),
        status=_one_of(node, "status", DEPLOYMENT_STATUSES),
        serves=serves,
    )
    node.finish()
    return deployment
