"""The JSON contracts page, written from the contracts' schemas (as exported to ``schemas/``), never by hand.

``python -m recall_dagster.contracts.reference > docs/contracts.md`` rewrites it;
a test fails when the page and the contracts part.
"""

from __future__ import annotations

from typing import Any, Iterator

from recall_dagster.contracts.export import CONTRACTS, schema_of

HEADER = """# JSON contracts

Generated from the contracts by `python -m recall_dagster.contracts.reference > docs/contracts.md`; do not edit
it by hand. The JSON Schemas themselves are in the repository's `schemas/` folder
(`schemas/<command>.schema.json`, exported by `python -m recall_dagster.contracts schemas`), and the tests validate
every command's real output against them.

Every output carries `schema_version`. A field may be added at the same version (the schemas admit properties
they do not name, so a consumer built against an older schema keeps working); a rename or a removal bumps it.
Recall builds each output from its contract's models, which refuse a field they do not name, so what Recall
itself writes names only what its schema lists.
"""


def _type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in prop:
        part = prop["$ref"].rsplit("/", 1)[1]
        return f"[{part}](#{part.lower()})" if "properties" in defs.get(part, {}) else _type(defs.get(part, {}), defs)
    if "anyOf" in prop:
        return " or ".join(_type(p, defs) for p in prop["anyOf"])
    if "enum" in prop:
        return " / ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}), defs)}"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"mapping to {_type(prop['additionalProperties'], defs)}"
    return str(kind)


def _table(schema: dict[str, Any], defs: dict[str, Any]) -> Iterator[str]:
    required = set(schema.get("required", ()))
    yield "| field | type | always there |\n|---|---|---|"
    for name, prop in schema.get("properties", {}).items():
        yield f"| `{name}` | {_type(prop, defs).replace('|', chr(92) + '|')} | {'yes' if name in required else ''} |"


def reference() -> str:
    """Each command's contract: its own fields, then each part it is made of."""
    parts = [HEADER]
    for name in CONTRACTS:
        schema = schema_of(name)
        defs = schema.get("$defs", {})
        parts += [f"## `{name}`\n", f"`recall {name.replace('-', ' ')} --json`: `schemas/{name}.schema.json`.\n",
                  *_table(schema, defs), ""]
        for part, definition in defs.items():
            if "properties" in definition:
                parts += [f"### {part}\n", *_table(definition, defs), ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(reference(), end="")
