"""Which production models a change to one column reaches, and through which of their inputs.

The caller names a column, never a model: the graph says who reads it.  The
column is closed downstream over column-level lineage (not re-rooted: the
change happens here, its upstream is untouched), and a model is affected
through each feature whose source column the walk reaches.  A model that
records no features (the mlflow source writes none) is affected through the
columns its training runs read, each standing for the model input of the
same name.  Where column lineage stops short of the model (an aggregate over
the changed table), the model's unlineaged input columns are affected through
table lineage: derived inputs, replayed as an approximation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from recall_dagster.errors import ConfigError
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.estate.reach import poisoned_features, read_columns, table_reach
from recall_dagster.estate.columns import Col, ColumnGraph, column_name, lineage_to
from recall_dagster.lifecycle.config import LifecycleConfig


@dataclass(frozen=True)
class AffectedInput:
    name: str  # the model input it stands for: the feature's name, or the column's
    feature: str | None  # mlFeature URN, None for a training column
    column: Col  # the column the model reads
    lineage: tuple[Col, ...]  # the changed column first, ``column`` last

    @property
    def derived(self) -> bool:
        """Read through a transformation, so replaying the change on it is an approximation."""
        return len(self.lineage) > 1

    def to_json(self) -> dict[str, Any]:
        return {
            "input": self.name,
            "feature": self.feature,
            "column": column_name(self.column),
            "derived": self.derived,
            "lineage": [column_name(c) for c in self.lineage],
        }


@dataclass(frozen=True)
class AffectedModel:
    closure: ModelClosure
    inputs: tuple[AffectedInput, ...]


def changed_column(columns: ColumnGraph, table: str, column: str) -> Col:
    """The column a change is proposed on, of ``table`` (its canonical URN), checked against every column any
    twin of the table records."""
    known = columns.columns.get(table, ())
    if column not in known:
        listed = ", ".join(known[:12]) + (" …" if len(known) > 12 else "")
        raise ConfigError(
            f"{display_name(table)} has no column {column!r}" + (f" (columns: {listed})" if known else " recorded")
        )
    return (table, column)


def affected_models(
    closures: Sequence[ModelClosure], columns: ColumnGraph, changed: Col, lc: LifecycleConfig
) -> tuple[AffectedModel, ...]:
    """Every closure the change reaches, each with the inputs it reaches them through, by model name."""
    parents = columns.reach([changed])
    out = []
    for closure in closures:
        if closure.features:
            inputs = tuple(
                AffectedInput(hit.name, hit.urn, hit.column, hit.lineage)
                for hit in poisoned_features(closure, parents, columns, lc.reach)
            )
        else:
            inputs = tuple(
                AffectedInput(col[1], None, col, lineage_to(col, parents))
                for col in sorted(read_columns(closure, columns))
                if col in parents
            )
        if not inputs:  # column lineage stops short: the inputs a table-level reach may change, as suspects
            inputs = tuple(AffectedInput(col[1], None, col, (changed, col))
                           for col in table_reach(closure, columns, frozenset({changed[0]})))
        if inputs:
            out.append(AffectedModel(closure, inputs))
    return tuple(sorted(out, key=lambda a: (a.closure.model.name, a.closure.urn)))
