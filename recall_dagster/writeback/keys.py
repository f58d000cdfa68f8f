"""Deterministic URNs for everything Recall writes, and the marks it recognises them by.

Every URN is derived from what the write is about (``guid(detector, subject)``
style), so a re-run updates the entity it wrote last time instead of piling up
a new one.  The marks (a custom property, an incident ``customType`` prefix, a
tag prefix, the managed tag) are how a later scan, on any machine, finds what
Recall owns in the graph itself: stand-down needs no local memory of earlier
scans.
"""

from __future__ import annotations


from datahub.emitter.mce_builder import datahub_guid, make_assertion_urn, make_tag_urn
from datahub.metadata.schema_classes import AuditStampClass
from datahub.metadata.urns import DocumentUrn, IncidentUrn, StructuredPropertyUrn

from recall_dagster.estate.marks import MANAGED_BY, MANAGED_BY_KEY

ACTOR = "urn:li:corpuser:recall"  # who Recall's audit stamps name
INCIDENT_TYPE_PREFIX = "recall:"  # incidentInfo.customType of Recall's incidents ("recall:<detector>")
TAG_PREFIX = "recall:"  # every tag named so is Recall's to add and remove
MANAGED_TAG = "recall:managed"  # on every assertion, incident and document Recall writes

RISK_SCORE = StructuredPropertyUrn("recall.riskScore").urn()
RISK_TIER = StructuredPropertyUrn("recall.riskTier").urn()
LAST_SCANNED = StructuredPropertyUrn("recall.lastScanned").urn()


def assertion_urn(detector: str, subject: str) -> str:
    return make_assertion_urn(datahub_guid({"recall": "assertion", "detector": detector, "subject": subject}))


def incident_urn(detector: str, subject: str) -> str:
    """Independent of the incident's target, so moving it from a model to a dataset keeps it one incident."""
    return IncidentUrn(datahub_guid({"recall": "incident", "detector": detector, "subject": subject})).urn()


def document_urn(model_urn: str) -> str:
    return DocumentUrn(datahub_guid({"recall": "premortem", "model": model_urn})).urn()


def tag_urn(name: str) -> str:
    return make_tag_urn(name)


MANAGED_TAG_URN = tag_urn(MANAGED_TAG)


def is_recall_tag(urn: str) -> bool:
    return urn.startswith(tag_urn(TAG_PREFIX))


def managed(**extra: str) -> dict[str, str]:
    """Custom properties marking an entity as Recall's, with what it is about."""
    return {MANAGED_BY_KEY: MANAGED_BY, **extra}


def stamp(time_ms: int, message: str | None = None) -> AuditStampClass:
    return AuditStampClass(time=time_ms, actor=ACTOR, message=message)
