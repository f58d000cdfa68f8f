"""A small ML estate, as the proposals an ingestion run would write (shared by the graph tests)."""

from __future__ import annotations

from dataclasses import dataclass

from datahub.emitter.mce_builder import (
    make_dataset_urn,
    make_ml_feature_table_urn,
    make_ml_feature_urn,
    make_ml_model_deployment_urn,
    make_ml_model_group_urn,
    make_ml_model_urn,
)
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    DataProcessInstanceInputClass,
    EdgeClass,
    MLFeaturePropertiesClass,
    MLFeatureTablePropertiesClass,
    MLModelPropertiesClass,
    StatusClass,
    UpstreamClass,
    UpstreamLineageClass,
)


@dataclass(frozen=True)
class Estate:
    raw: str
    mart: str
    total: str
    count: str
    table: str
    model: str
    group: str
    deployment: str
    run: str
    retired: str

    def mcps(self) -> list[MetadataChangeProposalWrapper]:
        aspects = [
            (self.raw, StatusClass(removed=False)),
            (self.mart, UpstreamLineageClass(upstreams=[UpstreamClass(dataset=self.raw, type="TRANSFORMED")])),
            (self.total, MLFeaturePropertiesClass(sources=[self.mart], dataType="CONTINUOUS")),
            (self.count, MLFeaturePropertiesClass(sources=[self.mart, self.raw])),
            (self.table, MLFeatureTablePropertiesClass(mlFeatures=[self.total, self.count])),
            (
                self.model,
                MLModelPropertiesClass(
                    name="churn",
                    mlFeatures=[self.total, self.count],
                    deployments=[self.deployment],
                    trainingJobs=[self.run],
                    groups=[self.group],
                ),
            ),
            (
                self.run,
                DataProcessInstanceInputClass(
                    inputs=[self.raw],  # the legacy field: Consumes
                    inputEdges=[EdgeClass(destinationUrn=self.mart)],  # DataProcessInstanceConsumes
                ),
            ),
            (self.retired, StatusClass(removed=True)),
        ]
        return [MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect) for urn, aspect in aspects]


def make_estate() -> Estate:
    return Estate(
        raw=make_dataset_urn("postgres", "shop.raw.orders"),
        mart=make_dataset_urn("postgres", "shop.mart.order_features"),
        total=make_ml_feature_urn("order_features", "order_total"),
        count=make_ml_feature_urn("order_features", "order_count"),
        table=make_ml_feature_table_urn("feast", "order_features"),
        model=make_ml_model_urn("mlflow", "churn_3", "PROD"),
        group=make_ml_model_group_urn("mlflow", "churn", "PROD"),
        deployment=make_ml_model_deployment_urn("sagemaker", "churn-endpoint", "PROD"),
        run="urn:li:dataProcessInstance:churn-training-run-7",
        retired=make_dataset_urn("postgres", "shop.raw.legacy_orders"),
    )
