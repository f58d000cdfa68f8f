"""Training code and the feature registry of the estate Recall watches.

Importing the package stays light (no MLflow, no scikit-learn) so metadata code
can read the registry without paying for the training stack: import
``ml_models.train`` for that.
"""

from ml_models.registry import (
    DEFAULT_REGISTRY_PATH,
    ColumnRef,
    Deployment,
    Feature,
    FeatureRegistry,
    FeatureTable,
    ModelSpec,
    Owner,
    TrainingSpec,
    WarehouseTable,
    load_registry,
)

__all__ = [
    "DEFAULT_REGISTRY_PATH",
    "ColumnRef",
    "Deployment",
    "Feature",
    "FeatureRegistry",
    "FeatureTable",
    "ModelSpec",
    "Owner",
    "TrainingSpec",
    "WarehouseTable",
    "load_registry",
]
