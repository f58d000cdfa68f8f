"""How long a scan takes on a demo-sized estate once the graph is warm.

Builds a synthetic estate (raw -> staging -> marts, features, feature tables,
training runs, deployments, assertions) in a temporary DataHub Lite file,
then times each stage of a scan against a baseline measured in the same run:
reading every aspect of every entity once, the floor any scan must pay.

    .venv/bin/python benchmarks/scan_bench.py [--scale N] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import datahub.metadata.schema_classes as dh
from datahub.emitter.mcp import MetadataChangeProposalWrapper

from recall_dagster.detect import run_detectors
from recall_dagster.estate import resolve_closures
from recall_dagster.graph import LiteGraph
from recall_dagster.scan import MemoryStateStore, load_config, run_scan, score_models

NOW = int(time.time() * 1000)


def _dataset(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.{name},PROD)"


def _mcp(urn: str, aspect) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect)


def _schema(name: str, columns: list[str]) -> dh.SchemaMetadataClass:
    return dh.SchemaMetadataClass(
        schemaName=name,
        platform="urn:li:dataPlatform:postgres",
        version=0,
        hash="",
        platformSchema=dh.OtherSchemaClass(rawSchema=""),
        fields=[
            dh.SchemaFieldClass(fieldPath=c, type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()), nativeDataType="numeric")
            for c in columns
        ],
    )


def estate(scale: int) -> Iterator[MetadataChangeProposalWrapper]:
    """``scale`` copies of a demo-shaped estate: 3 models, 12 features, 25 datasets each."""
    owner = dh.OwnershipClass([dh.OwnerClass("urn:li:corpuser:oncall", "TECHNICAL_OWNER")])
    for s in range(scale):
        raws = [f"raw.t{s}_{i}" for i in range(10)]
        stages = [f"staging.t{s}_{i}" for i in range(10)]
        marts = [f"marts.m{s}_{i}" for i in range(5)]
        for i, name in enumerate(raws + stages + marts):
            urn = _dataset(name)
            ups = [] if name in raws else ([raws[i - 10]] if name in stages else stages[2 * (i - 20) : 2 * (i - 20) + 2])
            yield _mcp(urn, _schema(name, ["id", "amount", f"f{s}_{i % 12}"]))
            yield _mcp(urn, dh.DatasetPropertiesClass(description=f"{name} table"))
            yield _mcp(urn, owner)
            yield _mcp(urn, dh.OperationClass(timestampMillis=NOW, operationType="INSERT", lastUpdatedTimestamp=NOW))
            if ups:
                yield _mcp(urn, dh.UpstreamLineageClass([dh.UpstreamClass(_dataset(u), "TRANSFORMED") for u in ups]))
            assertion = f"urn:li:assertion:a{s}_{i}"
            yield _mcp(
                assertion,
                dh.AssertionInfoClass(type="CUSTOM", customAssertion=dh.CustomAssertionInfoClass(type="dbt", entity=urn)),
            )
            yield _mcp(
                assertion,
                dh.AssertionRunEventClass(
                    timestampMillis=NOW, runId="r", asserteeUrn=urn, assertionUrn=assertion,
                    status="COMPLETE", result=dh.AssertionResultClass(type="SUCCESS"),
                ),
            )
        features = [f"urn:li:mlFeature:(f{s},f{s}_{i})" for i in range(12)]
        for i, feature in enumerate(features):
            yield _mcp(feature, dh.MLFeaturePropertiesClass(sources=[_dataset(marts[i % 5])]))
        for t in range(2):
            table = f"urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,table{s}_{t})"
            yield _mcp(table, dh.MLFeatureTablePropertiesClass(mlFeatures=features[t * 6 : t * 6 + 6]))
        for m in range(3):
            model = f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,model{s}_{m}_1,PROD)"
            run = f"urn:li:dataProcessInstance:run{s}_{m}"
            deployment = f"urn:li:mlModelDeployment:(urn:li:dataPlatform:mlflow,dep{s}_{m},PROD)"
            used = features[m * 4 : m * 4 + 4]
            yield _mcp(run, dh.DataProcessInstanceInputClass(inputs=[], inputEdges=[dh.EdgeClass(_dataset(marts[(m * 4 + k) % 5])) for k in range(4)]))
            yield _mcp(deployment, dh.MLModelDeploymentPropertiesClass(status="IN_SERVICE"))
            yield _mcp(model, dh.MLModelPropertiesClass(mlFeatures=used, trainingJobs=[run], deployments=[deployment]))
            yield _mcp(model, owner)


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1, help="copies of the demo-sized estate")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median reported)")
    args = parser.parse_args()
    config = load_config()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        writer = LiteGraph(db)
        report = writer.emit_mcps(estate(args.scale))
        writer.close()
        graph = LiteGraph(db, read_only=True)
        try:
            everything = [u for t in ("dataset", "mlModel", "mlFeature", "mlFeatureTable", "assertion") for u in graph.list_urns(t)]
            scan = lambda: run_scan(graph, config, MemoryStateStore(), scanned_at_ms=NOW)  # noqa: E731
            cold = timed(scan, 1)
            baseline = timed(lambda: graph.get_aspects(everything), args.repeat)
            closures = resolve_closures(graph, config.resolve, scanned_at_ms=NOW)
            detection = run_detectors(closures, config, {})
            rows = [
                ("baseline: read every aspect once", baseline),
                ("scan, cold", cold),
                ("resolve closures", timed(lambda: resolve_closures(graph, config.resolve, scanned_at_ms=NOW), args.repeat)),
                ("run detectors", timed(lambda: run_detectors(closures, config, {}), args.repeat)),
                ("score", timed(lambda: score_models(closures, detection, config, at_ms=NOW), args.repeat)),
                ("scan, warm (end to end)", timed(scan, args.repeat)),
            ]
        finally:
            graph.close()
    print(f"estate: {report.written} aspects, {len(everything)} entities, {len(closures)} production models")
    for label, ms in rows:
        print(f"{label:36s} {ms:8.1f} ms  {ms / baseline:6.1f}x baseline")


if __name__ == "__main__":
    main()
