"""The compiled encoder writes exactly the JSON the SDK's ``to_obj`` writes, and fails exactly where it fails.

Compared on every aspect class the SDK knows (its defaults), on every aspect in
the project's MCP fixtures and the scale benchmark's estate, on system
metadata, and on hypothesis-mangled SDK objects: fields dropped, nulled,
retyped, nested.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from avrogen.dict_wrapper import DictWrapper
from datahub.metadata.schema_classes import ASPECT_NAME_MAP, SystemMetadataClass
from hypothesis import given, settings
from hypothesis import strategies as st
from test_graph_decode import FIXTURE_ASPECTS, JUNK

from benchmarks.synthetic_estate import Shape, estate
from recall_dagster.graph.encode import to_obj


def outcome(encode: Any, record: DictWrapper) -> tuple[str, Any]:
    """What a write stores: the JSON text (key order included), or the kind of failure."""
    try:
        return "ok", json.dumps(encode(record))
    except Exception as err:  # noqa: BLE001 - which error is the SDK's business; that there is one is ours
        return "error", type(err).__name__


def sdk(record: DictWrapper) -> Any:
    return record.to_obj()


@pytest.mark.parametrize("cls", sorted(ASPECT_NAME_MAP.values(), key=lambda c: c.ASPECT_NAME), ids=lambda c: c.ASPECT_NAME)
def test_every_aspect_class_encodes_its_defaults_as_the_sdk_does(cls: type[DictWrapper]) -> None:
    record = cls._construct_with_defaults()
    assert outcome(to_obj, record) == outcome(sdk, record)


def test_fixture_and_benchmark_aspects_and_system_metadata_encode_as_the_sdk_does() -> None:
    records = [cls.from_obj(obj) for cls, obj in FIXTURE_ASPECTS]
    records += [mcp.aspect for mcp in estate(Shape(models=3))]
    records.append(SystemMetadataClass(lastObserved=5, runId="r", properties={"sysVersion": "2"}))
    assert len({type(r) for r in records}) >= 25, "the comparison covers real variety"
    for record in records:
        ours = outcome(to_obj, record)
        assert ours == outcome(sdk, record) and ours[0] == "ok", type(record).__name__


def mangle(value: Any, data: st.DataObject) -> Any:
    """``value`` (an SDK object, in place) with some fields dropped, nulled or replaced by junk, at any depth."""
    if isinstance(value, DictWrapper):
        inner = value._inner_dict
        for key in list(inner):
            move = data.draw(st.sampled_from(["keep", "keep", "keep", "drop", "null", "junk", "deeper"]))
            if move == "drop":
                del inner[key]
            elif move == "null":
                inner[key] = None
            elif move == "junk":
                inner[key] = data.draw(JUNK)
            elif move == "deeper":
                mangle(inner[key], data)
    elif isinstance(value, list):
        for item in value:
            mangle(item, data)
    return value


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_mangled_objects_encode_or_fail_as_the_sdk_does(data: st.DataObject) -> None:
    cls, obj = data.draw(st.sampled_from(FIXTURE_ASPECTS))
    record = mangle(cls.from_obj(copy.deepcopy(obj)), data)
    assert outcome(to_obj, record) == outcome(sdk, record)
