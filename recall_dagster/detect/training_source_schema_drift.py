"""A dataset the model depends on gained, lost or retyped a column since its baseline.

Severity follows consequence: a change to a column training reads directly, or
to one that reaches a feature through column-level lineage, changes what the
model sees (CRITICAL); anything else in the closure is worth knowing (WARN).
The first scan only records baselines (in the state store), so it reports nothing.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Mapping

from recall_dagster.detect.config import RecallConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState, SchemaBaseline
from recall_dagster.estate import FieldRef, ModelClosure

NAME = "training_source_schema_drift"
CASES = ("model_input_column", "other_column")


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1].casefold()


def _columns(closure: ModelClosure, urn: str, baselines: Mapping[str, SchemaBaseline]) -> set[str]:
    """Columns a dataset has now or had at its baseline (a lost column still counts)."""
    current = {f.path for f in closure.dataset(urn).fields or ()}
    return current | set(baselines.get(urn, {}))


def model_input_columns(closure: ModelClosure, baselines: Mapping[str, SchemaBaseline]) -> frozenset[FieldRef]:
    """Columns whose change reaches the model: read by training or feeding a feature.

    A feature is matched to the source column its custom property names, else
    to the column that carries its name; when neither exists, the whole source
    counts, because we cannot tell which column feeds it.  Columns upstream of
    those through column-level lineage count too.
    """
    targets: set[FieldRef] = set()
    for urn in closure.training_inputs:
        targets.update((urn, c) for c in _columns(closure, urn, baselines))
    for feature in closure.features:
        for source in feature.sources:
            columns = _columns(closure, source, baselines)
            wanted = (feature.column or feature.name).casefold()
            named = {c for c in columns if c.casefold() == wanted or _leaf(c) == wanted}
            targets.update((source, c) for c in (named or columns))
    feeds: dict[FieldRef, set[FieldRef]] = {}
    for dataset in closure.datasets.values():
        for edge in dataset.column_lineage:
            feeds.setdefault(edge.downstream, set()).add(edge.upstream)
    reached = set(targets)
    queue = deque(targets)
    while queue:
        for upstream in feeds.get(queue.popleft(), ()):
            if upstream not in reached:
                reached.add(upstream)
                queue.append(upstream)
    return frozenset(reached)


def _changes(before: SchemaBaseline, after: Mapping[str, str]) -> list[dict[str, str | None]]:
    changes: list[dict[str, str | None]] = []
    for column in sorted(set(before) | set(after)):
        if column not in before:
            changes.append({"column": column, "change": "added", "before": None, "after": after[column]})
        elif column not in after:
            changes.append({"column": column, "change": "removed", "before": before[column], "after": None})
        elif before[column] != after[column]:
            changes.append({"column": column, "change": "retyped", "before": before[column], "after": after[column]})
    return changes


def _describe(changes: Iterable[dict[str, str | None]]) -> str:
    words = []
    for c in changes:
        if c["change"] == "retyped":
            words.append(f"{c['column']} retyped {c['before']} -> {c['after']}")
        else:
            words.append(f"{c['column']} {c['change']}")
    shown = words[:3]
    more = f" and {len(words) - 3} more" if len(words) > 3 else ""
    return ", ".join(shown) + more


def detect(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> list[Finding]:
    baselines = state.schema_baselines
    inputs = model_input_columns(closure, baselines)
    findings: list[Finding] = []
    for urn, dataset in sorted(closure.datasets.items()):
        if dataset.fields is None or urn not in baselines:
            continue
        changes = _changes(baselines[urn], {f.path: f.type for f in dataset.fields})
        if not changes:
            continue
        reaching = [c for c in changes if (urn, c["column"]) in inputs]
        case = "model_input_column" if reaching else "other_column"
        consequence = (
            f"; {', '.join(sorted(str(c['column']) for c in reaching))} feed{'s' if len(reaching) == 1 else ''} "
            f"what {closure.model.name} trains or serves on"
            if reaching
            else ""
        )
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, case),
                urn,
                f"{dataset.name} changed schema since its baseline: {_describe(changes)}{consequence}",
                cause=urn,
                changes=changes,
                model_input_columns=sorted(str(c["column"]) for c in reaching),
            )
        )
    return findings
