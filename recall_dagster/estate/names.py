"""Short, human names for URNs: what a report row or a message should say."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

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
    except Exception:  # any unparsable URN is shown verbatim
        return urn
    ids = [_decoded(i) for i in parsed.entity_ids]
    kind = parsed.entity_type
    if kind == "mlFeature" and len(ids) == 2:
        return f"{ids[0]}.{ids[1]}"
    if kind in ("dataset", "mlModel", "mlModelGroup", "mlModelDeployment", "mlFeatureTable") and len(ids) >= 2:
        return ids[1]
    if kind == "schemaField" and len(ids) == 2:
        return f"{display_name(ids[0])}.{ids[1]}"
    return ids[-1] if ids else urn



# DataHub's sources write a name's reserved characters (",", "(", ")", "␟") percent-encoded inside a URN
# (datahub.utilities.urn_encoder); the name people gave, and call the thing by, has them as written.
_RESERVED = {"%2c": ",", "%28": "(", "%29": ")", "%e2%90%9f": "␟"}
_ENCODED = re.compile("|".join(re.escape(code) for code in _RESERVED), re.IGNORECASE)


def _decoded(part: str) -> str:
    return _ENCODED.sub(lambda m: _RESERVED[m.group().lower()], part)


_PLATFORM_NAME = re.compile(r"([A-Za-z0-9_-]+):(.+)")
_DATASET_PLATFORM = re.compile(r"urn:li:dataset:\(urn:li:dataPlatform:([^,]+),")


def named_by(urn: str, target: str, aliases: Sequence[str] = ()) -> bool:
    """Whether ``target`` names ``urn``: the URN itself, ``platform:name`` (``postgres:shop.marts.orders``), its
    full name, the name's trailing parts (``marts.fct_orders``), or one of its ``aliases`` (a dbt node's
    ``unique_id``); names compared case-insensitively."""
    if target == urn:
        return True
    wanted = target.casefold()
    if any(a.casefold() == wanted for a in aliases):
        return True
    qualified = _PLATFORM_NAME.fullmatch(target) if not target.startswith("urn:") else None
    if qualified is not None:
        platform = _DATASET_PLATFORM.match(urn)
        if platform is None or platform.group(1).casefold() != qualified.group(1).casefold():
            return False
        wanted = qualified.group(2).casefold()
    name = display_name(urn).casefold()
    return name == wanted or name.endswith("." + wanted)


def assertion_named_by(urn: str, target: str, names: Sequence[str]) -> bool:
    """Whether ``target`` names the assertion ``urn``: the URN itself, its last part, or one of ``names`` (its
    own name, a dbt test's name and ``unique_id``); compared case-insensitively, as a table's names are. One rule
    for the blind window, ack and explain_finding, so a dbt test found by one is found by all."""
    wanted = target.casefold()
    return target == urn or any(n.casefold() == wanted for n in (display_name(urn), *names))
