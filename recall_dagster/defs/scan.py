"""The scan as five assets: ``model_closures → risk_findings → impact_tests → risk_scores → datahub_writeback``.

Each asset runs one stage of the scan's :class:`~recall_dagster.scan.Pipeline`, or a span of them, exactly as
``recall scan`` runs them all: ``model_closures`` reads, ``risk_findings`` detects (the first pass),
``impact_tests`` measures and spreads the blast radius from the measured severities, ``risk_scores`` scores;
so a person can rerun one stage from the UI and read what it produced in its metadata.
:func:`recall_scan_assets` builds them, after whatever assets a team names (its DataHub ingestion, say);
``datahub_writeback`` writes the diagnosis back into the graph.
"""

from typing import Any, Iterator, Sequence

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    Output,
)
from pydantic import Field

from recall_dagster.shown import shown
from recall_dagster.acks.service import in_force
from recall_dagster.defs._compat import asset_graph_of
from recall_dagster.defs.model_verdict import report_verdicts, watched
from recall_dagster.defs.resources import RecallResource
from recall_dagster.detect import Detection, count_by_severity
from recall_dagster.defs.shards import SHARD_ASSET, shard_scans_asset
from recall_dagster.detect.catalogue import Found
from recall_dagster.errors import ConfigError, ModelNotFound, ServiceUnreachable
from recall_dagster.clock import clock_ms
from recall_dagster.results import ScanResult
from recall_dagster.scan import Read
from recall_dagster.instants import iso_instant
from recall_dagster.narrate import headline
from recall_dagster.scan_markdown import (
    blast_radius_table,
    closures_table,
    coverage_list,
    detector_counts,
    METADATA_ROWS,
    measured_table,
    models_table,
    scan_report,
    table,
)
from recall_dagster.shard_parts import ShardParts
from recall_dagster.writeback.run import write_back
from recall_dagster.defs.translator import RecallTranslator, op_name, recall_asset

FAIL_TIER_CHECK = "no_model_at_fail_tier"
VERDICT_ROWS = 10  # models whose verdict is a line of its own in the scores' table, worst first
COUNTS = ("planned", "landed", "refused", "pending")


class ScanRunConfig(Config):
    """Which models to scan; the same choices as ``recall scan``'s flags."""

    models: list[str] = Field(
        default=[],
        description="Scan only these: registered names (their production versions), name/version, or URNs.",
    )
    include_all: bool = Field(default=False, description="Every model, not only production ones (recall scan --all).")
    full: bool = Field(
        default=False, description="Read every closure, not only those a change since the last scan reaches (--full)."
    )


class FindingsConfig(Config):
    accept_schema: list[str] = Field(
        default=[], description="Tables whose current schema becomes the baseline (URNs or names; * for all)."
    )


def scan_run_config(models: Sequence[str] = (), translator: RecallTranslator | None = None) -> dict[str, Any]:
    """Run config that points a scan job at some models (:func:`select_closures` selectors), for sensors and
    the launchpad alike."""
    config = ScanRunConfig(models=list(models))
    return {"ops": {op_name(translator or RecallTranslator(), "model_closures"): {"config": config.model_dump()}}}


def _model_closures(deps: Sequence[AssetKey | str], shards: int, translator: RecallTranslator) -> AssetsDefinition:
    @recall_asset(translator, "model_closures", deps=list(deps))
    def model_closures(config: ScanRunConfig, recall: RecallResource) -> Output[Read]:
        """Each model's upstream world read from the graph: features, training runs, datasets, deployments
        (with shards, gathered from every shard's part)."""
        if shards > 1 and not config.models:
            return _gathered(config, recall, shards)
        return _closures(config, recall)

    return model_closures


def _closures(config: ScanRunConfig, recall: RecallResource) -> Output[Read]:
    """The read stage over the closures a scan config picks; a named model the graph does not know fails the
    step by name."""
    settings = recall.settings()
    with recall.open_graph() as graph:
        acks = in_force(graph, settings, recall.configuration().scan.acknowledgements)
        try:
            read = recall.pipeline().read(graph, scanned_at_ms=clock_ms(), include_all=config.include_all,
                                          models=config.models, full=config.full, acks=acks)
        except ModelNotFound as err:
            raise Failure(str(err)) from err
    return _closures_output(read)


def _gathered(config: ScanRunConfig, recall: RecallResource, shards: int) -> Output[Read]:
    """Every shard's part of one scan, as ``shard_scans`` left them; parts that do not add up to one scan of
    the estate (missing, or of different instants) fail the step by name."""
    settings = recall.settings()
    with recall.open_graph() as graph:
        acks = in_force(graph, settings, recall.configuration().scan.acknowledgements)
        try:
            parts = ShardParts(settings.state_dir, settings.graph, config.include_all).load(shards)
            read = recall.pipeline().gathered(graph, parts, acks=acks)
        except ConfigError as err:
            raise Failure(str(err)) from err
    return _closures_output(read)


def _closures_output(read: Read) -> Output[Read]:
    closures, rescan = read.closures, read.rescan
    production = sum(1 for c in closures if c.production)
    return Output(
        read,
        metadata={
            "summary": shown(f"{len(closures)} closure(s) read, {production} of production models"
                             + (f"; {rescan.summary()}" if rescan is not None else "")),
            "scanned_at": iso_instant(read.scanned_at_ms),
            "models": len(closures),
            "production_models": production,
            "registered_unmarked": ", ".join(read.without_production.unmarked) or "none",
            "unlinked_failing": ", ".join(o.assertion.name for o in read.unlinked) or "none",
            **({"resolve": rescan.summary()} if rescan is not None else {}),
            "closures": MetadataValue.md(closures_table(closures)),
        },
    )


def risk_findings(model_closures: Read, config: FindingsConfig, recall: RecallResource) -> Output[Found]:
    """The first pass: every detector that needs one closure, over every closure (the shards', when they read
    them); schema baselines are kept in RECALL_HOME/state between scans."""
    try:
        found = recall.pipeline().detect(model_closures, accept_schema=config.accept_schema)
    except ConfigError as err:
        raise Failure(str(err)) from err
    findings = [f for fs in found.values() for f in fs]
    counts = count_by_severity(findings)
    return Output(
        found,
        metadata={
            "summary": shown(f"{len(findings)} finding(s) before the blast radius" + (": " + ", ".join(
                f"{n} {severity.value}" for severity, n in counts.items() if n) if findings else "")),
            **{s.value.lower(): n for s, n in counts.items()},
            "by_detector": MetadataValue.md(detector_counts(findings)),
        },
    )


def impact_tests(model_closures: Read, risk_findings: Found, recall: RecallResource) -> Output[Detection]:
    """Each finding on a column reaching a production model, replayed on the model: BLOCK raises it, PASS
    lowers it (``impact.measured`` in recall.yaml); then the blast radius spread from what it measured, as
    ``recall scan`` does."""
    pipeline = recall.pipeline()
    with recall.open_graph() as graph:
        measured = pipeline.spread(model_closures, pipeline.measured(graph, model_closures, risk_findings))
    findings = [f for found in measured.findings.values() for f in found if "measured" in f.evidence]
    verdicts = [str(f.evidence["measured"].get("verdict") or "UNMEASURED") for f in findings]
    tally = {v: verdicts.count(v) for v in ("BLOCK", "WARN", "PASS", "INCOMPLETE", "UNMEASURED")}
    return Output(
        measured,
        metadata={
            "summary": shown(f"{len(findings)} finding(s) replayed on their models" + (": " + ", ".join(
                f"{n} {v}" for v, n in tally.items() if n) if findings else "")),
            "measured": len(findings),
            **{v.lower(): n for v, n in tally.items()},
            "findings": MetadataValue.md(measured_table(model_closures.closures, measured)),
            "blast_radius": MetadataValue.md(blast_radius_table(measured.blast_radius)),
        },
    )


def _risk_scores(translator: RecallTranslator) -> AssetsDefinition:
    check = translator.check_name(FAIL_TIER_CHECK)

    @recall_asset(translator, "risk_scores", ("model_closures", "impact_tests"),
                  check_specs=[AssetCheckSpec(check, asset=translator.asset_key("risk_scores"),
                                              description="Fails (WARN) when a model reaches the fail tier "
                                                          "(scoring.fail_tier).")])
    def risk_scores(context: AssetExecutionContext, model_closures: Read, impact_tests: Detection,
                    recall: RecallResource) -> Iterator[Any]:
        """A score and a tier per model, worst first, leaving out what an acknowledgement in force covers; the
        check fails (WARN) when a model reaches the fail tier. Each model's own verdict check (on the asset that
        trains it) is recorded from these scores."""
        scores, fail_tier = _scored(model_closures, impact_tests, recall, check)
        recorded = report_verdicts(context.instance, scores.value, watched(asset_graph_of(context), translator))
        yield scores.with_metadata({**scores.metadata, "model_checks": recorded})
        yield fail_tier

    return risk_scores


def _scored(model_closures: Read, impact_tests: Detection, recall: RecallResource, check: str) -> Iterator[Any]:
    config = recall.configuration().scan
    result = recall.pipeline().score(model_closures, impact_tests)
    failing = [m.closure.model.name for m in result.failing]
    verdicts = {f"verdict: {m.closure.model.name}": shown(headline(m.score.tier, m.score.value, m.findings))
                for m in result.models[:VERDICT_ROWS] if m.findings}
    yield Output(
        result,
        metadata={
            "summary": shown(_summary(result, failing, config.scoring.fail_tier)),
            **verdicts,
            "models": MetadataValue.md(models_table(result)),
            "blast_radius": MetadataValue.md(blast_radius_table(result.blast_radius)),
            "coverage": MetadataValue.md(coverage_list(result)),
            "max_score": max((m.score.value for m in result.models), default=0),
            "at_fail_tier": len(failing),
            "acknowledgements_ignored": shown("; ".join(f"{i.ack.id} by {i.ack.by}: {i.why}"
                                                        for i in result.ignored_acks) or "none"),
        },
    )
    yield AssetCheckResult(
        check_name=check,
        passed=not failing,
        severity=AssetCheckSeverity.WARN,
        description=shown(_summary(result, failing, config.scoring.fail_tier)),
        metadata={"fail_tier": config.scoring.fail_tier, "models": ", ".join(failing) or "none"},
    )


def _summary(result: ScanResult, failing: Sequence[str], fail_tier: str) -> str:
    """The scan in the one line Dagster shows in the asset's table, before any Markdown."""
    if not result.models:
        return "no production model scanned"
    if not failing:
        return f"{len(result.models)} model(s) scanned, none at {fail_tier}; worst {result.models[0].score.tier}"
    return f"{len(failing)} of {len(result.models)} model(s) at {fail_tier}: {', '.join(failing)}"


def datahub_writeback(model_closures: Read, risk_scores: ScanResult, recall: RecallResource) -> MaterializeResult:
    """The diagnosis into DataHub with ``write_back``, as ``recall scan --write`` does, its evidence on disk first.

    Only a scan of the whole estate writes: one of chosen models would stand
    down the incidents and tags of every model it did not look at, so a
    sensor's rescan shows its report here and leaves DataHub to the next full scan.
    """
    report_md = MetadataValue.md(scan_report(risk_scores, limit=METADATA_ROWS))
    if not model_closures.whole_estate:
        why = "a scan of chosen models never writes back"
        return MaterializeResult(
            metadata={"summary": f"not written: {why}", "written": False, "why": why, "report": report_md}
        )
    settings = recall.settings()
    with settings.writing("writeback", "datahub_writeback"), recall.open_graph(read_only=False) as graph:
        report = write_back(graph, risk_scores, settings, recall.configuration().writeback, clock_ms())
    writes = ((path, *(counts[k] for k in COUNTS)) for path, counts in report.counts().items())
    landed = {k: sum(counts[k] for counts in report.counts().values()) for k in COUNTS}
    metadata: dict[str, Any] = {
        "summary": ("written: " if report.ok else "not all written: ")
                   + ", ".join(f"{n} {k}" for k, n in landed.items()),
        "written": report.ok,
        "run_id": report.run_id,
        "evidence": MetadataValue.path(str(report.evidence_dir)),
        "writes": MetadataValue.md(table(("path", *COUNTS), writes)),
        "report": report_md,
    }
    try:
        report.raise_for_status()
    except ServiceUnreachable as err:
        raise Failure(str(err), metadata=metadata) from err
    return MaterializeResult(metadata=metadata)


def recall_scan_assets(
    deps: Sequence[AssetKey | str] = (), shards: int = 1, translator: RecallTranslator | None = None,
) -> list[AssetsDefinition]:
    """The scan's five assets, ``model_closures`` downstream of ``deps`` (say, the team's DataHub ingestion);
    with ``shards`` > 1, ``shard_scans`` (:mod:`recall_dagster.defs.shards`) reads the estate in that many
    parts and ``model_closures`` gathers them. ``translator`` names them."""
    t = translator or RecallTranslator()
    stages = [
        recall_asset(t, "risk_findings", ("model_closures",))(risk_findings),
        recall_asset(t, "impact_tests", ("model_closures", "risk_findings"))(impact_tests),
        _risk_scores(t),
        recall_asset(t, "datahub_writeback", ("model_closures", "risk_scores"), kinds={"datahub"})(datahub_writeback),
    ]
    if shards > 1:
        return [shard_scans_asset(shards, deps, t), _model_closures([t.asset_key(SHARD_ASSET)], shards, t), *stages]
    return [_model_closures(deps, shards, t), *stages]
