"""Turn a model's findings into one number and a tier an on-call engineer can sort by.

``score = min(max_score, sum(weight[severity]) * (1 + deployment_factor * live_deployments))``:
the same problems weigh more on a model answering live traffic in more places.
Weights, factor, cap and tier thresholds all come from ``recall.yaml``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from recall_dagster.detect.config import ScoringConfig
from recall_dagster.detect.finding import Finding


@dataclass(frozen=True)
class Score:
    value: int
    tier: str


def tier_of(value: int, scoring: ScoringConfig) -> str:
    for tier in scoring.ranked:
        if value >= tier.minimum:
            return tier.name
    return scoring.healthy_tier


def score_model(findings: Iterable[Finding], live_deployments: int, scoring: ScoringConfig) -> Score:
    raw = sum(scoring.weights.points[f.severity] for f in findings) * (1 + scoring.deployment_factor * live_deployments)
    # round half up, after trimming float noise (10 * 1.15 is 11.4999...)
    value = min(scoring.max_score, math.floor(round(raw, 6) + 0.5))
    return Score(value, tier_of(value, scoring))
