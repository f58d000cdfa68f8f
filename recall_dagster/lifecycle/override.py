"""Whether a retrain may run on a gate verdict, and what an override of a refusal must carry.

A retrain past a NO-GO is sometimes right (the failing test is known noise, the
fix is the retrain itself), but a version trained that way must never look like
one the gate passed: whoever reads its blind window or an incident later has to
see who let it through and why.  So an override names a person and a reason, or
it is refused, and the same decision is taken by the gate step and by a training
step that asks the gate itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.errors import ConfigError

OVERRIDE_BY_TAG = "recall/gate_override_by"
OVERRIDE_REASON_TAG = "recall/gate_override_reason"
# Where the override is kept with the model version (MLflow version tags, which DataHub's mlflow source carries
# into the version's customProperties).
VERSION_BY = "recall.gate.override_by"
VERSION_REASON = "recall.gate.override_reason"
VERSION_VERDICT = "recall.gate.verdict"
VERSION_RUN = "recall.gate.dagster_run"


@dataclass(frozen=True)
class GateOverride:
    """A person's decision to retrain whatever the gate says, and the verdict it overrode once one did."""

    by: str
    reason: str
    verdict: str | None = None

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> "GateOverride | None":
        """The override a run's tags ask for; half of one (who without why, or why without who) is refused."""
        by, reason = tags.get(OVERRIDE_BY_TAG, "").strip(), tags.get(OVERRIDE_REASON_TAG, "").strip()
        if not by and not reason:
            return None
        if not by or not reason:
            missing = OVERRIDE_BY_TAG if not by else OVERRIDE_REASON_TAG
            raise ConfigError(
                f"an override of Recall's retrain gate names who ({OVERRIDE_BY_TAG}) and why ({OVERRIDE_REASON_TAG});"
                f" this run has no {missing} tag"
            )
        return cls(by, reason)

    @classmethod
    def from_version(cls, properties: Mapping[str, str]) -> "GateOverride | None":
        """The override a model version was trained under, from its MLflow tags (or DataHub's copy of them)."""
        by = properties.get(VERSION_BY, "")
        return cls(by, properties.get(VERSION_REASON, ""), properties.get(VERSION_VERDICT)) if by else None

    def version_tags(self, run_id: str) -> dict[str, str]:
        """What a version trained under this override carries: who, why, the verdict it overrode, the run."""
        return {VERSION_BY: self.by, VERSION_REASON: self.reason, VERSION_VERDICT: self.verdict or "", VERSION_RUN: run_id}

    def describe(self) -> str:
        return f"trained past a {self.verdict or 'refusing'} gate verdict by {self.by}: {self.reason}"

    def contract(self) -> contracts.GateOverride:
        return contracts.GateOverride(by=self.by, reason=self.reason, verdict=self.verdict)


@dataclass(frozen=True)
class GateDecision:
    """What happens to the retrain: ``allowed``, and the override it needed, if any."""

    verdict: str
    allowed: bool
    override: GateOverride | None = None


def decide(verdict: str, block_unverified: bool, override: GateOverride | None) -> GateDecision:
    """GO runs; UNVERIFIED runs unless ``block_unverified``; anything refused runs only under an override."""
    if verdict == "GO" or (verdict == "UNVERIFIED" and not block_unverified):
        return GateDecision(verdict, True)
    if override is None:
        return GateDecision(verdict, False)
    return GateDecision(verdict, True, replace(override, verdict=verdict))
