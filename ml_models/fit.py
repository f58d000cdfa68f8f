"""Turn the training frame into a fitted scikit-learn pipeline and held-out metrics.

Pure pandas / scikit-learn, no MLflow: what gets fitted and how it scores is
decided here, what gets recorded in train.py. Everything random is seeded from
the registry's ``random_state`` so two trainings on the same rows give the same
model and the same metrics.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.metrics import (
    average_precision_score,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
    roc_auc_score,
)
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder

from ml_models.query import feature_column, key_column, label_column
from ml_models.registry import ModelSpec
from recall_dagster.errors import ConfigError, RecallError

# Feature types encoded as categories; every other type must be numeric.
CATEGORICAL_TYPES = frozenset({"NOMINAL", "TEXT"})
MIN_ROWS = 10


class TrainingDataError(RecallError):
    """The warehouse returned rows training cannot use: too few, one class, or non-numeric values."""


@dataclass(frozen=True)
class PreparedData:
    features: pd.DataFrame  # one column per model feature, named by the feature
    label: pd.Series
    split_order: pd.Series | None  # values to hold the latest rows out by, if the model asks
    counts: dict[str, int]  # rows read, dropped and sampled, logged as metrics


@dataclass(frozen=True)
class FitResult:
    pipeline: Pipeline
    metrics: dict[str, float]
    train_features: pd.DataFrame  # for the model signature
    test_features: pd.DataFrame  # the held-out rows the metrics score, logged for impact tests
    test_label: pd.Series


def prepare(frame: pd.DataFrame, model: ModelSpec) -> PreparedData:
    """Drop rows training cannot use (counting them), subsample. The features arrive typed as the feature
    store serves them (:func:`ml_models.feature_store.typed_feature`); the label is typed here."""
    names = [f.name for f in model.features]
    features = frame[[feature_column(n) for n in names]].set_axis(names, axis=1)
    label = _typed_label(frame[label_column(model.label.column)], model)
    null_label = label.isna()
    null_features = features.isna().any(axis=1) & ~null_label
    keep = ~(null_label | null_features)
    counts = {
        "rows_read": len(frame),
        "rows_dropped_null_label": int(null_label.sum()),
        "rows_dropped_null_features": int(null_features.sum()),
    }
    features, label = features[keep], label[keep]
    spec = model.training
    if spec.max_rows is not None and len(features) > spec.max_rows:
        sampled = features.sample(n=spec.max_rows, random_state=spec.random_state).index.sort_values()
        features, label = features.loc[sampled], label.loc[sampled]
    counts["rows_used"] = len(features)
    if len(features) < MIN_ROWS:
        raise TrainingDataError(
            f"model {model.name}: only {len(features)} usable rows out of {len(frame)} read "
            f"({counts['rows_dropped_null_label']} without label, "
            f"{counts['rows_dropped_null_features']} with NULL features); need at least {MIN_ROWS}"
        )
    if model.task == "classification" and label.nunique() < 2:
        raise TrainingDataError(f"model {model.name}: every usable row has the same label {label.iloc[0]!r}")
    split_order = frame.loc[features.index, key_column(spec.split_by)] if spec.split_by else None
    return PreparedData(features=features, label=label, split_order=split_order, counts=counts)


def fit_and_evaluate(data: PreparedData, model: ModelSpec) -> FitResult:
    """Fit on the training split and score the held-out split."""
    x_train, x_test, y_train, y_test = _split(data, model)
    pipeline = Pipeline(
        [
            ("encode", _encoder(model)),
            ("estimator", build_estimator(model)),
        ]
    )
    pipeline.fit(x_train, y_train)
    metrics = _score(pipeline, x_test, y_test, model.task)
    metrics.update({k: float(v) for k, v in data.counts.items()})
    metrics["rows_train"] = float(len(x_train))
    metrics["rows_test"] = float(len(x_test))
    return FitResult(
        pipeline=pipeline, metrics=metrics, train_features=x_train, test_features=x_test, test_label=y_test
    )


def build_estimator(model: ModelSpec) -> Any:
    """Instantiate the registry's estimator class, seeding it when it takes a seed."""
    module_name, _, class_name = model.estimator_class.rpartition(".")
    try:
        estimator_class = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"model {model.name}: cannot import estimator {model.estimator_class}: {err}") from None
    try:
        estimator = estimator_class(**model.estimator_params)
    except TypeError as err:
        raise ConfigError(f"model {model.name}: bad estimator params for {model.estimator_class}: {err}") from None
    if "random_state" in estimator.get_params() and "random_state" not in model.estimator_params:
        estimator.set_params(random_state=model.training.random_state)
    return estimator


def _typed_label(values: pd.Series, model: ModelSpec) -> pd.Series:
    try:
        label = pd.to_numeric(values).astype("float64")
    except (TypeError, ValueError) as err:
        raise TrainingDataError(
            f"model {model.name}: label {model.label.model}.{model.label.column} is not numeric: {err}"
        ) from None
    if model.task == "classification":
        classes = set(label.dropna().unique())
        if not classes <= {0.0, 1.0}:
            raise TrainingDataError(
                f"model {model.name}: label {model.label.model}.{model.label.column} must be 0/1 "
                f"or boolean, found {sorted(classes)[:5]}"
            )
    return label


def _split(data: PreparedData, model: ModelSpec) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series]:
    spec = model.training
    if data.split_order is not None:
        # Forecasts are judged on the future: hold out the latest rows, not a random sample.
        ordered = data.split_order.sort_values(kind="stable").index
        cut = len(ordered) - max(1, round(len(ordered) * spec.test_fraction))
        train, test = ordered[:cut], ordered[cut:]
        return data.features.loc[train], data.features.loc[test], data.label.loc[train], data.label.loc[test]
    stratify = data.label if model.task == "classification" and data.label.value_counts().min() >= 2 else None
    return train_test_split(
        data.features,
        data.label,
        test_size=spec.test_fraction,
        random_state=spec.random_state,
        stratify=stratify,
    )


def _encoder(model: ModelSpec) -> ColumnTransformer:
    categorical = [f.name for f in model.features if f.data_type in CATEGORICAL_TYPES]
    return ColumnTransformer(
        [
            (
                "categorical",
                OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
                categorical,
            )
        ],
        remainder="passthrough",
    )


def _score(pipeline: Pipeline, features: pd.DataFrame, label: pd.Series, task: str) -> dict[str, float]:
    if task == "classification":
        scores = pipeline.predict_proba(features)[:, 1]
        metrics = {"positive_rate_test": float(label.mean())}
        if label.nunique() == 2:
            metrics["roc_auc"] = float(roc_auc_score(label, scores))
            metrics["average_precision"] = float(average_precision_score(label, scores))
        return metrics
    predictions = pipeline.predict(features)
    return {
        "rmse": float(np.sqrt(mean_squared_error(label, predictions))),
        "mae": float(mean_absolute_error(label, predictions)),
        "r2": float(r2_score(label, predictions)),
    }
