"""The compiled decoder builds exactly what the SDK's ``from_obj`` builds, and fails exactly where it fails.

Compared on every aspect class the SDK knows (its defaults), on every aspect in
the project's MCP fixtures (DataHub's file format, as its sources write it), and
on hypothesis-mangled versions of those: fields dropped, nulled, retyped, nested.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from datahub.emitter.serialization_helper import post_json_transform
from datahub.metadata.schema_classes import ASPECT_NAME_MAP, _Aspect
from hypothesis import given, settings
from hypothesis import strategies as st

from recall_dagster.graph.decode import aspect_from_text, compiled, decode_aspect

TESTS = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for folder in ("scan", "writeback", "foreign") for p in (TESTS / folder / "fixtures").glob("*.json"))


def outcome(decode: Any, cls: type[_Aspect], obj: Any) -> tuple[str, Any]:
    try:
        return "ok", decode(cls, obj).to_obj()
    except Exception as err:  # noqa: BLE001 - which error is the SDK's business; that there is one is ours
        return "error", type(err).__name__


def sdk(cls: type[_Aspect], obj: Any) -> _Aspect:
    return cls.from_obj(obj)


def ours(cls: type[_Aspect], obj: Any) -> _Aspect:
    return compiled(cls)(obj)


def wire_aspects() -> list[tuple[type[_Aspect], dict]]:
    """Every aspect of the fixtures in DataHub's wire form, as a store keeps it."""
    found = []
    for path in FIXTURES:
        for item in json.loads(path.read_text()):
            name, value = item.get("aspectName"), (item.get("aspect") or {}).get("json")
            if name in ASPECT_NAME_MAP and isinstance(value, dict):
                found.append((ASPECT_NAME_MAP[name], value))
    return found


WIRE_ASPECTS = wire_aspects()
FIXTURE_ASPECTS = [(cls, post_json_transform(value)) for cls, value in WIRE_ASPECTS]


def test_the_fixtures_hold_a_good_spread_of_aspects() -> None:
    assert len({cls for cls, _ in FIXTURE_ASPECTS}) >= 20, "the comparisons below cover real variety"


@pytest.mark.parametrize("cls", sorted(ASPECT_NAME_MAP.values(), key=lambda c: c.ASPECT_NAME), ids=lambda c: c.ASPECT_NAME)
def test_every_aspect_class_decodes_its_defaults_as_the_sdk_does(cls: type[_Aspect]) -> None:
    obj = cls._construct_with_defaults().to_obj()
    assert outcome(ours, cls, obj) == outcome(sdk, cls, obj)


def test_every_fixture_aspect_decodes_as_the_sdk_does() -> None:
    for cls, obj in FIXTURE_ASPECTS:
        decoded = ours(cls, obj)
        assert type(decoded) is cls and decoded.to_obj() == cls.from_obj(obj).to_obj(), cls.ASPECT_NAME


JUNK = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5),
                 st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def mangle(value: Any, data: st.DataObject, depth: int = 0) -> Any:
    """``value`` with some of its fields dropped, nulled or replaced by junk, at any depth."""
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            move = data.draw(st.sampled_from(["keep", "keep", "keep", "drop", "junk", "deeper"]))
            if move == "drop":
                continue
            out[key] = data.draw(JUNK) if move == "junk" else mangle(inner, data, depth + 1) if move == "deeper" else inner
        return out
    if isinstance(value, list) and value:
        return [mangle(v, data, depth + 1) for v in value]
    return value


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_mangled_aspects_succeed_or_fail_as_the_sdk_does(data: st.DataObject) -> None:
    cls, obj = data.draw(st.sampled_from(FIXTURE_ASPECTS))
    mangled = mangle(obj, data)
    assert outcome(decode_aspect, cls, mangled) == outcome(sdk, cls, mangled)
    fast = outcome(ours, cls, mangled)
    assert fast[0] == "error" or fast == outcome(sdk, cls, mangled), "the compiled path never differs"


def from_text(cls: type[_Aspect], text: str) -> _Aspect:
    return aspect_from_text(cls, text)


def sdk_from_text(cls: type[_Aspect], text: str) -> _Aspect:
    return cls.from_obj(post_json_transform(json.loads(text)))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_stored_text_decodes_as_the_sdk_reads_it_nulls_union_keys_and_all(data: st.DataObject) -> None:
    cls, wire = data.draw(st.sampled_from(WIRE_ASPECTS))
    text = json.dumps(mangle(wire, data))
    assert outcome(from_text, cls, text) == outcome(sdk_from_text, cls, text)
