"""One impact test: a mutation of one column, replayed on every production model it reaches.

For each affected model the version its production alias serves is loaded
with the rows its training held out; each affected input is mutated on its
own (and all of them together when the change reaches several, as it would in
production), scored against the unmutated baseline on the same rows, and
judged by the policy.  Everything that could not be measured is INCOMPLETE
with its reason, never a guess; the report is the JSON contract of
``recall impact``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from recall_dagster.contracts import records as contract
from recall_dagster.contracts.base import VERSION
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.impact.config import ImpactConfig
from recall_dagster.impact.measure import Inference, Measurement, infer, measure
from recall_dagster.impact.models import ModelSource, ModelUnavailable, Subject
from recall_dagster.impact.mutation_spec import Mutation
from recall_dagster.impact.mutations import MutationError, apply
from recall_dagster.impact.policy import Verdict, judge, worst
from recall_dagster.impact.targets import AffectedInput, AffectedModel
from recall_dagster.estate.columns import Col, column_name

Progress = Callable[[str], None]


@dataclass(frozen=True)
class InputResult:
    """The verdict on one model through one input (or, joined by ``+``, all its affected inputs at once)."""

    closure: ModelClosure
    inputs: tuple[AffectedInput, ...]
    verdict: Verdict
    reason: str
    measurement: Measurement | None = None
    version: str | None = None

    @property
    def feature(self) -> str:
        return "+".join(i.name for i in self.inputs)

    def contract(self) -> contract.ImpactResult:
        """The result as ``recall impact --json`` names it, the measurement's numbers rounded as it shows them."""
        m = self.measurement.to_json() if self.measurement else {}
        return contract.ImpactResult(
            model=self.closure.registered_name,
            version=self.version or self.closure.model.version,
            model_urn=self.closure.urn,
            feature=self.feature,
            verdict=self.verdict.value,
            reason=self.reason,
            metric=m.get("metric"),
            baseline=m.get("baseline"),
            mutated=m.get("mutated"),
            delta=m.get("delta"),
            ci=m.get("ci"),
            loss=m.get("loss"),
            flip_rate=m.get("flip_rate"),
            mean_abs_shift=m.get("mean_abs_shift"),
            failures=m.get("failures"),
            rows=m.get("rows"),
            live_deployments=[d.urn for d in self.closure.live_deployments],
            inputs=[i.to_json() for i in self.inputs],
        )


@dataclass(frozen=True)
class ImpactReport:
    dataset: str  # canonical URN
    column: str
    mutation: Mutation
    results: tuple[InputResult, ...]

    @property
    def verdict(self) -> Verdict:
        return worst([r.verdict for r in self.results])

    def model_verdicts(self) -> dict[str, Verdict]:
        """mlModel URN -> the worst verdict on it."""
        out: dict[str, list[Verdict]] = {}
        for r in self.results:
            out.setdefault(r.closure.urn, []).append(r.verdict)
        return {urn: worst(v) for urn, v in out.items()}

    @property
    def target(self) -> str:
        return f"{display_name(self.dataset)}.{self.column}"

    def contract(self, record: contract.Record | None = None) -> contract.Impact:
        """The report as ``recall impact --json`` names it; ``record`` is where the CLI kept it (the MCP tool keeps
        nothing, so its answer has no ``record`` at all)."""
        answer = contract.Impact(
            schema_version=VERSION,
            dataset=self.dataset,
            column=self.column,
            mutation=self.mutation.label,
            fraction=self.mutation.fraction,
            verdict=self.verdict.value,
            affected_models=len(self.model_verdicts()),
            results=[r.contract() for r in self.results],
        )
        if record is not None:
            answer.record = record
        return answer


def _column_for(item: AffectedInput, subject: Subject) -> str | None:
    """The evaluation column standing for an input: its name, else its source column's."""
    columns = subject.inputs.columns
    return next((c for c in (item.name, item.column[1]) if c in columns), None)


class _Baselines:
    """One unmutated inference per model, shared by all its inputs."""

    def __init__(self, batch_rows: int) -> None:
        self.batch_rows = batch_rows
        self.cache: dict[tuple[str, str], Inference] = {}

    def of(self, subject: Subject) -> Inference:
        key = (subject.registered_name, subject.version)
        if key not in self.cache:
            self.cache[key] = infer(subject.predictor, subject.inputs, self.batch_rows)
        return self.cache[key]


def _measure_inputs(
    affected: AffectedModel,
    inputs: tuple[AffectedInput, ...],
    subject: Subject,
    baselines: _Baselines,
    mutation: Mutation,
    config: ImpactConfig,
) -> InputResult:
    closure = affected.closure

    def incomplete(why: str) -> InputResult:
        return InputResult(closure, inputs, Verdict.INCOMPLETE, why, version=subject.version)

    columns = [_column_for(i, subject) for i in inputs]
    missing = [i.name for i, c in zip(inputs, columns) if c is None]
    if missing:
        return incomplete(
            f"the evaluation data has no column for {', '.join(missing)} "
            f"(it has {', '.join(map(str, subject.inputs.columns[:12]))})"
        )
    if len(subject.inputs) < config.min_rows:
        return incomplete(f"{len(subject.inputs)} evaluation rows, fewer than impact.min_rows ({config.min_rows})")
    base = baselines.of(subject)
    if base.failures == len(subject.inputs):
        return incomplete(f"the unmutated evaluation rows fail inference too: {base.error}")
    try:
        mutated_rows = apply(mutation, subject.inputs, [c for c in columns if c], config.seed)
    except MutationError as err:
        return incomplete(str(err))
    after = infer(subject.predictor, mutated_rows, config.batch_rows)
    m = measure(
        subject.predictor.task,
        base,
        after,
        subject.labels,
        replicates=config.bootstrap,
        confidence=config.confidence,
        seed=config.seed,
        flip_tolerance=config.flip_tolerance,
    )
    judgement = judge(m, config)
    reason = judgement.reason + (f" (first error: {after.error})" if after.error else "")
    return InputResult(closure, inputs, judgement.verdict, reason, m, subject.version)


def run_experiment(
    affected: Sequence[AffectedModel],
    changed: Col,
    mutation: Mutation,
    source: ModelSource,
    config: ImpactConfig,
    progress: Progress = lambda _: None,
) -> ImpactReport:
    """Measure every affected model; one that cannot be loaded is INCOMPLETE on each of its inputs."""
    baselines = _Baselines(config.batch_rows)
    results: list[InputResult] = []
    for model in affected:
        progress(f"{model.closure.model.name}: loading the served version and its evaluation rows")
        try:
            subject = source.load(model.closure)
        except ModelUnavailable as err:
            results.append(InputResult(model.closure, model.inputs, Verdict.INCOMPLETE, str(err)))
            continue
        groups = [(i,) for i in model.inputs] + ([model.inputs] if len(model.inputs) > 1 else [])
        for group in groups:
            progress(f"{model.closure.model.name}: {mutation.label} on {'+'.join(i.name for i in group)}")
            results.append(_measure_inputs(model, group, subject, baselines, mutation, config))
    return ImpactReport(changed[0], changed[1], mutation, tuple(results))


def describe_change(changed: Col, mutation: Mutation) -> str:
    share = "" if mutation.fraction == 1 or mutation.op == "null_fraction" else f" on {mutation.fraction:.0%} of rows"
    return f"{mutation.label} on {column_name(changed)}{share}"
