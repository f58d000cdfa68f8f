"""A dataset the model depends on gained, lost or retyped a column since its baseline.

Severity follows consequence: a change to a column training reads directly, or
to one that reaches a feature through column-level lineage, changes what the
model sees (CRITICAL); anything else in the closure is worth knowing (WARN).
The first scan only records baselines (in the state store), so it reports nothing.

One change is one finding: a table's twins (its dbt node, its warehouse table)
speak as one, and a change that flows down column lineage (a retyped raw
column retypes its staging and mart copies) is reported where it starts,
listing the columns it reached.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Mapping

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.memo import Memo
from recall_dagster.detect.state import DetectorState, SchemaBaseline
from recall_dagster.estate import Dataset, FieldRef, ModelClosure
from recall_dagster.estate.columns import Col, column_name
from recall_dagster.detect.declared import Detector, Reads

NAME = "training_source_schema_drift"
CASES = ("model_input_column", "other_column")
# Judged against the stored schema baselines: its verdicts are kept only while they are the same
# (recall_dagster.kept.verdicts).


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


Change = dict[str, "str | None"]


def _changes(before: SchemaBaseline, after: Mapping[str, str]) -> tuple[Change, ...]:
    changes: list[Change] = []
    for column in sorted(set(before) | set(after)):
        if column not in before:
            changes.append({"column": column, "change": "added", "before": None, "after": after[column]})
        elif column not in after:
            changes.append({"column": column, "change": "removed", "before": before[column], "after": None})
        elif before[column] != after[column]:
            changes.append({"column": column, "change": "retyped", "before": before[column], "after": after[column]})
    return tuple(changes)


def _describe(changes: Iterable[Change]) -> str:
    words = []
    for c in changes:
        if c["change"] == "retyped":
            words.append(f"{c['column']} retyped {c['before']} -> {c['after']}")
        else:
            words.append(f"{c['column']} {c['change']}")
    shown = words[:3]
    more = f" and {len(words) - 3} more" if len(words) > 3 else ""
    return ", ".join(shown) + more


def _against_baseline(dataset: Dataset, baseline: SchemaBaseline | None) -> tuple[Change, ...]:
    """What changed in the schema of ``dataset`` since its baseline; nothing when either is unknown."""
    if dataset.fields is None or baseline is None:
        return ()
    return _changes(baseline, {f.path: f.type for f in dataset.fields})


def _table_changes(
    closure: ModelClosure, baselines: Mapping[str, SchemaBaseline], memo: Memo
) -> dict[str, tuple[str, list[Change]]]:
    """Canonical table -> (the twin that speaks for it, its changes): a table's dbt node and warehouse twin
    drift together, and are one table."""
    found: dict[str, tuple[str, list[Change]]] = {}
    judged = memo.judgements(NAME, baselines)
    judge = lambda dataset: _against_baseline(dataset, baselines.get(dataset.urn))  # noqa: E731
    for urn, _, changes in sorted(judged.over(closure.datasets, judge), key=lambda item: item[0]):
        table = closure.canonical(urn)
        if table not in found:
            found[table] = (urn, list(changes))
            continue
        listed = {c["column"] for c in found[table][1]}
        found[table][1].extend(c for c in changes if c["column"] not in listed)
    return found


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    baselines = state.schema_baselines
    tables = _table_changes(closure, baselines, state.memo)
    if not tables:
        return []
    inputs = {(closure.canonical(urn), column) for urn, column in model_input_columns(closure, baselines)}
    changed = [(table, str(c["column"])) for table, (_, changes) in tables.items() for c in changes]
    start = closure.columns.starts(changed) if len(tables) > 1 else {col: col for col in changed}
    copies: dict[Col, list[Col]] = {}
    for col, origin in sorted(start.items()):
        copies.setdefault(origin, []).append(col)
    findings: list[Finding] = []
    for table, (urn, changes) in sorted(tables.items()):
        own = [c for c in changes if (table, c["column"]) in copies]
        if not own:
            continue  # every change here came down lineage from a table that reports it
        flowed = {str(c["column"]): copies[(table, str(c["column"]))] for c in own}
        reaching = sorted(column for column, cols in flowed.items() if any(col in inputs for col in cols))
        reached = sorted(column_name(col) for cols in flowed.values() for col in cols if col[0] != table)
        case = "model_input_column" if reaching else "other_column"
        consequence = (
            f"; {', '.join(reaching)} feed{'s' if len(reaching) == 1 else ''} "
            f"what {closure.model.name} trains or serves on"
            if reaching
            else ""
        )
        spread = f"; reached {', '.join(reached)}" if reached else ""
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, case),
                urn,
                f"{closure.dataset(urn).name} changed schema since its baseline: {_describe(own)}{consequence}{spread}",
                cause=urn,
                changes=own,
                model_input_columns=reaching,
                reached=reached,
            )
        )
    return findings


DETECTOR = Detector(NAME, detect, CASES, Reads.BASELINES)
