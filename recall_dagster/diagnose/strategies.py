"""The repair catalogue: what to do about the best explanation of a regression, each option proven or not.

For a bug in a feature's code, a zero guard on one of its divisions; for bad
data, a retrain on the data as it stood before the failure, a rollback to the
newest version the blind window proves clean, and (to stop the next one) the
failing test added one step upstream, where it fails before ``dbt build``
rebuilds the table the model reads.  Every option that applies is listed; the
first is the one to apply: a proven option before an unproven one, and a retrain
before a rollback, because a retrain keeps what else the candidate changed.
Nothing here writes to the team's project: edits are proven in a copy
(:mod:`~recall_dagster.diagnose.repair`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from recall_dagster.contracts import records as contract
from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.diagnose.dbt_tests import dbt_test_outcome, upstream_test_edit
from recall_dagster.diagnose.facts import Facts
from recall_dagster.diagnose.metric_gate import metric_gate
from recall_dagster.diagnose.hypotheses import NO_DATA_CAUSE, Hypothesis
from recall_dagster.diagnose.repair import (
    Command,
    RepairRefused,
    Validation,
    check_limits,
    guarded_division_edits,
    prove_smallest,
    validate_in_copy,
)
from recall_dagster.estate.dbt import DbtNode
from recall_dagster.instants import iso_instant

MetricsOf = Callable[[str], Mapping[str, float]]  # a version's logged metrics
DATA_CAUSES = ("upstream_data_quality", "label_change")


@dataclass(frozen=True)
class Repair:
    strategy: str  # "guard_division" | "retrain_before_failure" | "rollback" | "add_dbt_test"
    description: str
    patch: str | None
    validated: bool
    metric: str | None
    metric_before: float | None  # the candidate's
    metric_after: float | None  # the repaired copy's (or the rollback target's), when measured
    reason: str
    tried: tuple[Validation, ...] = ()

    @property
    def proof(self) -> str:
        """How it was shown to work, as a reviewer reads it."""
        if not self.validated:
            return "not proven"
        return "measured by its own logged metrics" if self.strategy == "rollback" else "proven in a copy"

    def contract(self) -> contract.Repair:
        """The repair as a diagnosis names it, every copy it was tried in included."""
        return contract.Repair(
            strategy=self.strategy,
            description=self.description,
            patch=self.patch,
            validated=self.validated,
            metric=self.metric,
            metric_before=self.metric_before,
            metric_after=self.metric_after,
            reason=self.reason,
            tried=[v.to_json() for v in self.tried],
        )


@dataclass(frozen=True)
class Context:
    """What every strategy reads: the facts, the config, the metric to restore and where commands run."""

    facts: Facts
    top: Hypothesis
    config: DiagnoseConfig
    primary: str | None
    env: Mapping[str, str] | None

    @property
    def project(self) -> Path:
        return Path(self.config.repair.project).expanduser()

    @property
    def before(self) -> float | None:
        return self.facts.candidate.metrics.get(self.primary) if self.primary else None

    def recovery(self, metrics: Mapping[str, float]) -> tuple[bool, str]:
        """Whether the primary drop is back within tolerance of the baseline or has won back
        ``diagnose.repair.min_recovery`` of itself, with no other metric worse than the candidate's beyond its
        tolerance; and what each metric did, as a reviewer reads it."""
        baseline, floor = self.facts.baseline.metrics, self.config.repair.min_recovery
        before = {r.name: r for r in metric_gate(self.facts.candidate.metrics, baseline, self.config).rows}
        after = {r.name: r for r in metric_gate(metrics, baseline, self.config).rows}
        harm = {r.name: r for r in metric_gate(metrics, self.facts.candidate.metrics, self.config).rows}
        verdicts, parts = [], []
        for name, drop in before.items():
            now = after.get(name)
            if now is None or now.delta is None or drop.delta is None:
                if name == self.primary:
                    verdicts.append(False)
                    parts.append(f"{name} was not measured")
                continue
            if name == self.primary:
                won = (now.delta - drop.delta) / -drop.delta if drop.delta else 1.0  # either direction: 1 = all
                within = not now.regressed
                verdicts.append(within or won >= floor)
                told = "(within tolerance of the baseline)" if within else f"({won:.0%} of its drop won back)"
            else:
                worse = harm[name].regressed
                verdicts.append(not worse)
                told = "(worse than the candidate beyond its tolerance)" if worse else "(no worse than the candidate)"
            parts.append(f"{name} {drop.candidate:.4g} -> {now.candidate:.4g} {told}")
        return bool(verdicts) and all(verdicts), "; ".join(parts)

    def after(self, metrics: Mapping[str, float] | None) -> float | None:
        return metrics.get(self.primary) if metrics and self.primary else None

    def substitutions(self, **more: str) -> dict[str, str]:
        return {"model": self.facts.model, "python": sys.executable, **more}


def guard_division(ctx: Context) -> Repair | None:
    """Guard each division of the changed transform in turn, in a copy; keep the first that restores the metric."""
    clue = next((c for c in ctx.top.evidence if c.kind == "transform_changed" and c.data.get("function")), None)
    if clue is None:
        return None
    module, function = str(clue.data["module"]), str(clue.data["function"])
    try:
        edits = guarded_division_edits(ctx.project, module, function)
        chosen, tried = prove_smallest(ctx.project, edits, ctx.config.repair, ctx.substitutions(),
                                       lambda metrics: ctx.recovery(metrics)[0], ctx.env)
    except RepairRefused as err:
        return Repair("guard_division", f"guard the divisions of {module}:{function}", None, False, ctx.primary,
                      ctx.before, None, str(err))
    if chosen is None:
        shown = tried[0] if tried else None
        why = ("no repair command is configured (diagnose.repair.command): proposed, not proven"
               if not ctx.config.repair.command else "no guarded division won the regression back: "
               + (ctx.recovery(shown.metrics)[1] if shown and shown.metrics else "no edit retrained cleanly"))
        return Repair("guard_division", shown.edit.description if shown and shown.edit else f"guard {module}:{function}",
                      shown.edit.patch if shown and shown.edit else None, False, ctx.primary, ctx.before,
                      ctx.after(shown.metrics if shown else None), why, tuple(tried))
    return Repair("guard_division", chosen.edit.description if chosen.edit else "", chosen.edit.patch if chosen.edit
                  else None, True, ctx.primary, ctx.before, ctx.after(chosen.metrics),
                  f"retrained in a copy of {ctx.project}: {ctx.recovery(chosen.metrics or {})[1]}", tuple(tried))


def retrain_before_failure(ctx: Context) -> Repair | None:
    """Retrain, in a copy, on the rows loaded before the failing test last passed; proven when the metric
    comes back."""
    clean = [int(c.data["clean_until_ms"]) for c in ctx.top.evidence
             if c.kind in ("assertion_failed", "label_shift") and not c.against and c.data.get("clean_until_ms")]
    if not clean:
        return None
    before = iso_instant(min(clean))
    description = f"retrain {ctx.facts.model} on the rows loaded before {before}, when the failing test last passed"
    if not ctx.config.repair.retrain:
        return Repair("retrain_before_failure", description, None, False, ctx.primary, ctx.before, None,
                      "no retrain command is configured (diagnose.repair.retrain): proposed, not proven")
    try:
        validation = validate_in_copy(ctx.project, None, ctx.config.repair, ctx.substitutions(before=before), ctx.env,
                                      Command(ctx.config.repair.retrain, "retrain"))
    except RepairRefused as err:
        return Repair("retrain_before_failure", description, None, False, ctx.primary, ctx.before, None, str(err))
    proven, how = ctx.recovery(validation.metrics or {}) if validation.ok else (False, "")
    reason = (f"retrained in a copy of {ctx.project} on the data before {before}: {how}" if proven
              else f"the retrain in a copy did not win the regression back: {how}" if validation.ok
              else f"the retrain command failed in the copy (exit {validation.returncode})")
    return Repair("retrain_before_failure", description, None, proven, ctx.primary, ctx.before,
                  ctx.after(validation.metrics), reason, (validation,))


def rollback(ctx: Context, metrics_of: MetricsOf) -> Repair:
    """To the newest version the blind window proves clean, when it names one; else keep the baseline."""
    clue = next((c for c in ctx.top.evidence if c.kind == "contaminated" and c.data.get("rollback")), None)
    target = str(clue.data["rollback"]) if clue else ctx.facts.baseline.version
    why = (f"the blind window names it: {clue.data.get('rollback_note')}" if clue
           else f"version {target}'s own logged metrics are the ones the candidate failed to match")
    after = metrics_of(target).get(ctx.primary) if ctx.primary else None
    return Repair("rollback", f"keep (or roll back to) version {target}", None, after is not None, ctx.primary,
                  ctx.before, after, why)


def add_dbt_test(ctx: Context) -> Repair | None:
    """The failing test, added one step upstream in the team's dbt YAML and run there in a copy: proven when it
    fails on today's data, so ``dbt build`` would have stopped before rebuilding what the model reads."""
    repair = ctx.config.repair
    clue = next((c for c in ctx.top.evidence if c.kind == "assertion_failed" and not c.against
                 and c.data.get("guard_upstream")), None)
    dbt_project = repair.dbt.project
    if clue is None or not dbt_project:
        return None
    failing, column, node_name = DbtNode(str(clue.data["dbt_node"])), str(clue.data["column"]), str(clue.data["kind"])
    refusals = []
    for guard in clue.data["guard_upstream"]:
        target, upstream = DbtNode(str(guard["node"])), str(guard["column"])
        try:
            edit, name = upstream_test_edit(ctx.project, dbt_project, failing, column, node_name, target,
                                            upstream)
            check_limits(edit, repair)
        except RepairRefused as err:
            refusals.append(str(err))
            continue
        if not repair.dbt.command:
            return Repair("add_dbt_test", edit.description, edit.patch, False, None, None, None,
                          "no dbt command is configured (diagnose.repair.dbt.command): proposed, not proven")
        def outcome(copy: Path, _stdout: str, at: DbtNode = target, col: str = upstream, test: str = name
                    ) -> dict[str, float] | None:
            return dbt_test_outcome(copy / dbt_project, at, col, test)

        command = Command(repair.dbt.command, "dbt.command", outcome)
        try:
            validation = validate_in_copy(ctx.project, edit, repair, ctx.substitutions(select=target.selector),
                                          ctx.env, command)
        except RepairRefused as err:
            refusals.append(str(err))
            continue
        counts = validation.metrics or {}
        caught = counts.get("fail", 0) > 0
        reason = (f"run in a copy, it fails on today's data ({counts.get('failing_rows', 0):,.0f} rows): dbt build "
                  f"would have stopped before rebuilding {failing.path[-1]}" if caught
                  else "run in a copy, it passes on today's data: it would not catch this failure now"
                  if counts.get("pass") else "the added test did not run in the copy (see its output)")
        return Repair("add_dbt_test", edit.description, edit.patch, caught, None, None, None, reason, (validation,))
    return Repair("add_dbt_test", f"add the test {node_name} upstream of {failing.path[-1]}.{column}", None, False, None,
                  None, None, refusals[0] if refusals else "no upstream column to add it to")


def propose_repairs(
    facts: Facts, ranked: tuple[Hypothesis, ...], config: DiagnoseConfig, primary: str | None,
    metrics_of: MetricsOf, env: Mapping[str, str] | None = None,
) -> tuple[Repair, ...]:
    """Every repair the catalogue has for the best hypothesis, the one to apply first.
    ``env`` is the environment the proving commands run in (the caller's, with its RECALL_HOME)."""
    if not ranked or ranked[0].kind == NO_DATA_CAUSE:
        return ()
    ctx = Context(facts, ranked[0], config, primary, env)
    fixes: list[Repair | None] = []
    if ctx.top.kind == "feature_transformation":
        fixes.append(guard_division(ctx))
    if ctx.top.kind in DATA_CAUSES:
        fixes.append(retrain_before_failure(ctx))
    fixes.append(rollback(ctx, metrics_of))
    found = [r for r in fixes if r is not None]
    if ctx.top.kind == "feature_transformation" and found[0].strategy == "guard_division":
        ordered = found  # the guard is the repair even unproven: a rollback leaves the bug in the code
    else:
        ordered = sorted(found, key=lambda r: not r.validated)
    prevention = add_dbt_test(ctx) if ctx.top.kind in DATA_CAUSES else None
    return (*ordered, *([prevention] if prevention else []))
