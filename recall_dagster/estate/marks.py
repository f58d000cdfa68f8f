"""The mark Recall puts on what it writes, so it never reads its own verdicts back as evidence.

Recall's assertions hang on the datasets at fault and fail while a finding
holds; a scan that counted them would report each as a new failing assertion
and every write-back would feed the next scan.
"""

from __future__ import annotations

from typing import Mapping

from datahub.metadata.schema_classes import AssertionInfoClass

MANAGED_BY_KEY = "recall.managedBy"
MANAGED_BY = "recall-dagster"


def is_managed(custom_properties: Mapping[str, str] | None) -> bool:
    """True for an entity Recall wrote (its customProperties carry the mark)."""
    return (custom_properties or {}).get(MANAGED_BY_KEY) == MANAGED_BY


def recall_assertion(aspects: Mapping[str, object]) -> bool:
    """An assertion (given its aspects) whose ``assertionInfo`` carries the mark: Recall's verdict, not evidence."""
    info = aspects.get(AssertionInfoClass.ASPECT_NAME)
    return isinstance(info, AssertionInfoClass) and is_managed(info.customProperties)
