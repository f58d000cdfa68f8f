"""Structured properties: Recall's risk score, tier and last scan on every scanned model.

Writing ``structuredProperties`` replaces every property on the entity, so the
values are merged into what the model already carries: properties others
wrote survive, Recall's three are replaced.  (A JSON patch would avoid the read
but GMS was reported not to index patched structured properties for search.)
"""

from __future__ import annotations

from datahub.metadata.schema_classes import (
    PropertyValueClass,
    StructuredPropertiesClass,
    StructuredPropertyDefinitionClass,
    StructuredPropertyValueAssignmentClass,
)

from recall_dagster.detect.config import ScoringConfig
from recall_dagster.instants import iso_instant
from recall_dagster.writeback.context import PlanContext
from recall_dagster.writeback.keys import LAST_SCANNED, RISK_SCORE, RISK_TIER
from recall_dagster.writeback.writes import Write

_ML_MODEL = "urn:li:entityType:datahub.mlModel"
RECALL_PROPERTIES = (RISK_SCORE, RISK_TIER, LAST_SCANNED)


def definition(
    urn: str, value_type: str, display: str, description: str, *, allowedValues: list[PropertyValueClass] | None = None
) -> Write:
    qualified = urn.removeprefix("urn:li:structuredProperty:")
    definition = StructuredPropertyDefinitionClass(
        qualifiedName=qualified,
        displayName=display,
        valueType=f"urn:li:dataType:datahub.{value_type}",
        entityTypes=[_ML_MODEL],
        description=description,
        allowedValues=allowedValues,
    )
    return Write.of("property", urn, definition, f"define {qualified}")


def definitions(scoring: ScoringConfig) -> list[Write]:
    """The three definitions; values are refused by GMS until these exist, so they are written first."""
    return [
        definition(
            RISK_SCORE,
            "number",
            "Recall risk score",
            f"0 (healthy) to {scoring.max_score}: how likely upstream data problems are to break this model, "
            "weighted by its live deployments.",
        ),
        definition(
            RISK_TIER,
            "string",
            "Recall risk tier",
            "The tier the risk score falls in, most serious first: " + ", ".join(scoring.tier_names()) + ".",
            allowedValues=[PropertyValueClass(value=tier) for tier in scoring.tier_names()],
        ),
        definition(
            LAST_SCANNED,
            "string",
            "Recall last scanned (UTC)",
            "When Recall last scanned this model's upstream closure, as an ISO-8601 instant.",
        ),
    ]


def plan_properties(ctx: PlanContext) -> list[Write]:
    scanned = iso_instant(ctx.now_ms)
    writes = definitions(ctx.result.config.scoring)
    for report in ctx.result.models:
        urn = report.closure.urn
        current = ctx.state.aspect(urn, StructuredPropertiesClass)
        others = [p for p in (current.properties if current else []) if p.propertyUrn not in RECALL_PROPERTIES]
        ours = [
            StructuredPropertyValueAssignmentClass(propertyUrn=RISK_SCORE, values=[float(report.score.value)]),
            StructuredPropertyValueAssignmentClass(propertyUrn=RISK_TIER, values=[report.score.tier]),
            StructuredPropertyValueAssignmentClass(propertyUrn=LAST_SCANNED, values=[scanned]),
        ]
        writes.append(
            Write.of(
                "property",
                urn,
                StructuredPropertiesClass(properties=others + ours),
                f"{report.closure.model.name}: score {report.score.value}, tier {report.score.tier}",
            )
        )
    return writes
