"""The configuration reference, written from the models and the shipped defaults, never by hand.

``python -m recall_dagster.config.reference > docs/configuration.md`` rewrites
it; a test fails when the file and the models part, so the reference cannot go
stale when a key is added, bounded differently or described anew.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from recall_dagster.config.load import DEFAULT_CONFIG
from recall_dagster.config.models import RecallFile
from recall_dagster.config.overlay import REPLACE
from recall_dagster.config.words import described

_ABSENT = object()

HEADER = f"""# `recall.yaml` reference

Generated from `recall_dagster/config/models.py` by
`python -m recall_dagster.config.reference > docs/configuration.md`; do not edit it by hand.

Recall lays up to three files over each other: the shipped defaults
(`recall_dagster/recall.yaml`, the "shipped" column below), then
`$RECALL_HOME/recall.yaml`, then the file `--config` or `RECALL_CONFIG` names. A
layer needs only the keys it changes. Mappings merge key by key, a layer's keys
first, so a team's first-match globs (`lifecycle.classification`,
`lifecycle.row_counts`, `freshness.windows`) are tried before the shipped ones;
any other value is replaced. `{REPLACE}: true` in a layer's mapping makes it stand
instead of the shipped one whole (a team's own `scoring.tiers`, say). The whole
file is checked whenever any command loads it: an unknown key, a value of the
wrong kind or out of its range, NaN or an infinity, a file that is not UTF-8 is
exit 2, naming the file and the key.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _shipped(value: Any) -> str:
    if value is _ABSENT:
        return ""
    shown = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return f"`{shown.removesuffix(chr(10) + '...').strip()}`"


def _rows(key: str, field: FieldInfo, default: Any) -> Iterator[tuple[str, str, str, str]]:
    """The reference's rows for one key: a section's keys in turn, named entries by their keys."""
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if field.description and "." in key:
            yield key, "a mapping", "", field.description
        for name, inner in annotation.model_fields.items():
            yield from _rows(f"{key}.{name}", inner, default.get(name, _ABSENT) if isinstance(default, Mapping) else _ABSENT)
        return
    entry = get_args(annotation)[1] if get_origin(annotation) is dict else None
    if isinstance(entry, type) and issubclass(entry, BaseModel):  # named entries: the names, then their keys
        names = ", ".join(default) if isinstance(default, Mapping) else ""
        yield key, described(annotation, list(field.metadata)), names, field.description or ""
        for name, inner in entry.model_fields.items():
            yield from _rows(f"{key}.<name>.{name}", inner, _ABSENT)
        return
    yield key, described(annotation, list(field.metadata)), _shipped(default), field.description or ""


def reference() -> str:
    """The whole reference, section by section in the order of the shipped file."""
    defaults = yaml.safe_load(DEFAULT_CONFIG.read_text(encoding="utf-8"))
    parts = [HEADER]
    for name, field in RecallFile.model_fields.items():
        section: Any = field.annotation
        parts.append(f"## `{name}`\n")
        if isinstance(section, type) and issubclass(section, BaseModel) and field.description:
            parts.append(f"{field.description}\n")
        parts.append("| key | must be | shipped | what it means |\n|---|---|---|---|")
        parts.extend(f"| `{k}` | {_cell(kind)} | {_cell(shipped)} | {_cell(meaning)} |"
                     for k, kind, shipped, meaning in _rows(name, field, defaults.get(name, _ABSENT)))
        parts.append("")
    return "\n".join(parts)


if __name__ == "__main__":
    print(reference(), end="")
