"""Hand-built closures for detector unit tests: no graph, just views."""

from __future__ import annotations

from typing import Iterable

from recall_dagster.estate import (
    Dataset,
    Deployment,
    Feature,
    FeatureTable,
    Model,
    ModelClosure,
    Owner,
    SchemaField,
    TrainingRun,
    assemble_closure,
)

NOW = 1_748_736_000_000
HOUR = 3_600_000
ALICE = (Owner("urn:li:corpuser:alice"),)


def ds(name: str, *upstreams: str, **kwargs) -> Dataset:
    """A documented, owned dataset named ``db.<name>``; upstreams are names too."""
    kwargs.setdefault("owners", ALICE)
    kwargs.setdefault("description", f"{name} described")
    return Dataset(urn=urn(name), name=f"db.{name}", upstreams=tuple(urn(u) for u in upstreams), **kwargs)


def urn(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,db.{name},PROD)"


def cols(**types: str) -> tuple[SchemaField, ...]:
    return tuple(SchemaField(path, t) for path, t in types.items())


def feature(name: str, *sources: str, tabled: bool = True) -> Feature:
    return Feature(
        urn=f"urn:li:mlFeature:(ns,{name})",
        name=name,
        sources=tuple(urn(s) for s in sources),
        tables=("urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,t)",) if tabled else (),
    )


def run(name: str, *inputs: str) -> TrainingRun:
    return TrainingRun(urn=f"urn:li:dataProcessInstance:{name}", name=name, inputs=tuple(urn(i) for i in inputs))


def closure(
    *,
    features: Iterable[Feature] = (),
    runs: Iterable[TrainingRun] = (),
    datasets: Iterable[Dataset] = (),
    deployments: Iterable[Deployment] = (Deployment("urn:li:mlModelDeployment:(urn:li:dataPlatform:k,live,PROD)", "live", status="IN_SERVICE", live=True),),
    production_versions: tuple[str, ...] = (),
    max_depth: int = 10,
    **model_fields,
) -> ModelClosure:
    features, runs, deployments = list(features), list(runs), list(deployments)
    model_fields.setdefault("owners", ALICE)
    model = Model(
        urn="urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_1,PROD)",
        name="m_1",
        features=tuple(f.urn for f in features),
        training_runs=tuple(r.urn for r in runs),
        deployments=tuple(d.urn for d in deployments),
        **model_fields,
    )
    tables = {t: FeatureTable(t, "t", features=tuple(f.urn for f in features)) for f in features for t in f.tables}
    return assemble_closure(
        model,
        production=True,
        features={f.urn: f for f in features},
        feature_tables=tables,
        training_runs={r.urn: r for r in runs},
        deployments={d.urn: d for d in deployments},
        datasets={d.urn: d for d in datasets},
        production_versions=production_versions,
        max_depth=max_depth,
    )
