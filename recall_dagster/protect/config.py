"""The ``protect:`` section of ``recall.yaml``."""

from __future__ import annotations

from pydantic import Field, model_validator

from recall_dagster.config.fields import Number, Positive, Section, Texts

COMPONENTS = ("tests", "freshness", "owner", "documentation", "incidents")


class ProtectWeights(Section):
    tests: Number = Field(description="Points for dbt or DataHub tests on the dataset's columns.")
    freshness: Number = Field(description="Points for a dataset changed within its freshness window.")
    owner: Number = Field(description="Points for a named owner.")
    documentation: Number = Field(description="Points for a description.")
    incidents: Number = Field(description="Points for no recent incidents (see incident_memory).")

    @model_validator(mode="after")
    def _add_up_to_100(self) -> "ProtectWeights":
        total = sum(self.of(c) for c in COMPONENTS)
        if abs(total - 100) > 1e-9:
            raise ValueError(f"must add up to 100, not {total:g}")
        return self

    def of(self, component: str) -> float:
        """The points ``component`` (one of :data:`COMPONENTS`) is worth."""
        return float(getattr(self, component))


class ProtectConfig(Section):
    """`recall protect`: reliability of each dataset on a production path (``protect``)."""

    weights: ProtectWeights = Field(description="Points of the 0-100 reliability score, per component.")
    incident_memory: Positive = Field(description="Past incidents on a dataset that take its incident points to zero.")
    suggested_tests: Texts = Field(description="dbt generic tests suggested for an untested critical column.")
    top: Positive = Field(description="Gaps listed (the JSON keeps them all).")
