"""What diagnosis reasons over: the two training runs and the clues found between them.

Collected from MLflow and the graph by :mod:`recall_dagster.diagnose.collect`;
everything downstream (the metric gate, the hypotheses, their scores) is a pure
function of these records, so a test can state a situation in a few lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

# Where a clue sits relative to the model: on a column a feature reads (through
# lineage), on a table training reads, further upstream, or nowhere the model reads.
Relevance = Literal["feature", "input", "upstream", "none"]


@dataclass(frozen=True)
class RunFacts:
    """What one model version's training run recorded."""

    version: str
    run_id: str | None
    start_ms: int | None
    end_ms: int | None
    metrics: Mapping[str, float] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)
    schemas: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # input table -> column -> type
    features: tuple[str, ...] = ()


@dataclass(frozen=True)
class Clue:
    """One fact between the two runs that could explain a change in the model.

    ``kind`` names what was seen (see CLUE_KINDS); ``at_ms`` when it happened,
    None when unknown; ``fields`` the features (or columns) it touches;
    ``measured_loss`` the metric loss an impact test reproduced by replaying it,
    when one could; ``against`` marks counter-evidence (a test that recovered
    before the candidate trained, a change to code no feature uses).
    """

    kind: str
    subject: str
    detail: str
    relevance: Relevance
    at_ms: int | None = None
    fields: tuple[str, ...] = ()
    measured_loss: float | None = None
    against: bool = False
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": self.subject,
            "detail": self.detail,
            "relevance": self.relevance,
            "at_ms": self.at_ms,
            "fields": list(self.fields),
            "measured_loss": self.measured_loss,
            "against": self.against,
            **({"data": dict(self.data)} if self.data else {}),
        }


CLUE_KINDS = (
    "assertion_failed",  # a test on the data failed inside the interval
    "assertion_recovered",  # ... and passed again before the candidate trained (counter-evidence)
    "contaminated",  # the blind window marks the candidate CONTAMINATED
    "schema_changed",  # a column the runs read was added, removed or retyped between them
    "input_stale",  # an input had not changed for longer than its freshness window when the candidate trained
    "transform_changed",  # the code computing a feature changed (its recorded hash or name differs)
    "code_changed",  # the training code's revision changed, with no feature-level record of what
    "param_changed",  # a training parameter differs
    "features_changed",  # the feature list differs
    "label_shift",  # the label's base rate or label table changed
    "serving_skew",  # the candidate serves from data its training never read
    "rows_changed",  # an input's row count moved beyond tolerance
    "profile_shifted",  # a profiled column a feature reads moved between the two trainings (profile_drift's bounds)
)


@dataclass(frozen=True)
class Facts:
    """Both runs, the drop the gate saw, and every clue between them."""

    model: str  # registered model name
    candidate: RunFacts
    baseline: RunFacts
    clues: tuple[Clue, ...] = ()
    total_features: int = 0
    unverified: tuple[str, ...] = ()  # evidence diagnosis could not look at, and why
