"""Short, human names for URNs: what a report row or a message should say."""

from __future__ import annotations

from functools import lru_cache

from datahub.utilities.urns.urn import Urn

# A training input MLflow's own dataset sources name: the mlflow source's reference, until a table answers to it.
MLFLOW_DATASET = "urn:li:dataset:(urn:li:dataPlatform:mlflow,"


@lru_cache(maxsize=1 << 16)  # parsing a URN costs tens of microseconds, and reports name the same ones again
def display_name(urn: str) -> str:
    """The part of a URN a person recognises (``db.marts.orders``, ``fraud_detector_3``).

    Falls back to the URN itself when it does not parse, so a malformed
    reference from someone else's estate still renders.
    """
    try:
        parsed = Urn.from_string(urn)
    except Exception:  # noqa: BLE001 - any unparsable URN is shown verbatim
        return urn
    ids = parsed.entity_ids
    kind = parsed.entity_type
    if kind == "mlFeature" and len(ids) == 2:
        return f"{ids[0]}.{ids[1]}"
    if kind in ("dataset", "mlModel", "mlModelGroup", "mlModelDeployment", "mlFeatureTable") and len(ids) >= 2:
        return ids[1]
    if kind == "schemaField" and len(ids) == 2:
        return f"{display_name(ids[0])}.{ids[1]}"
    return ids[-1] if ids else urn



def named_by(urn: str, target: str) -> bool:
    """Whether ``target`` names ``urn``: the URN itself, its full name, or the name's trailing parts
    (``marts.fct_orders``), names compared case-insensitively."""
    if target == urn:
        return True
    name, wanted = display_name(urn).casefold(), target.casefold()
    return name == wanted or name.endswith("." + wanted)
