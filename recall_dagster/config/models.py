"""The shape of ``recall.yaml``, every value's range and every rule between values: one model per section.

These models are the one statement of what the file may say. The loader
checks the layered file against them whatever the command (so a typo under
``protect:`` fails ``recall gate`` too), the configuration reference is
generated from their descriptions (:mod:`recall_dagster.config.reference`),
and the domain's own config objects are built from what they accept
(:mod:`recall_dagster.config.build`). Values are strict: YAML's ``"10"`` is not
a number, ``yes`` is not a count, NaN and infinities are refused.

A validator that finds a mistake in one key of its section raises :class:`KeyMistake`
naming that key, so the message points at ``scoring.fail_tier``, not at ``scoring``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, model_validator

from recall_dagster.detect.finding import Severity
from recall_dagster.diagnose.config import SIGNALS
from recall_dagster.errors import ConfigError
from recall_dagster.impact.config import DRIFT_CHANGES
from recall_dagster.impact.mutation_spec import parse_mutation
from recall_dagster.lifecycle.config import CHECK_NAMES
from recall_dagster.protect.config import COMPONENTS
from recall_dagster.writeback.keys import MANAGED_TAG, TAG_PREFIX


class KeyMistake(ValueError):
    """A rule between values broken at ``key`` (a dotted path below the section that checks it)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key, self.message = key, message


def _none_is_empty(value: Any) -> Any:
    return [] if value is None else value


def _none_is_empty_mapping(value: Any) -> Any:
    return {} if value is None else value


def _severity(value: Any) -> Any:
    """A severity as written, in any case; YAML has no enums, so the text is the value."""
    if isinstance(value, str) and value.upper() in Severity.__members__:
        return Severity[value.upper()]
    if isinstance(value, Severity):
        return value
    raise ValueError(f"must be one of {', '.join(s.value for s in Severity)}")


def _mutation(spec: str) -> str:
    try:
        parse_mutation(spec)
    except ConfigError as err:
        raise ValueError(str(err)) from None
    return spec


def _web_address(value: str) -> str:
    if value and not value.startswith(("http://", "https://")):
        raise ValueError("an http:// or https:// address, or empty")
    return value


Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
WebAddress = Annotated[str, StringConstraints(strip_whitespace=True), AfterValidator(_web_address)]
Texts = Annotated[list[Text], BeforeValidator(_none_is_empty)]
Number = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
Level = Annotated[Severity, BeforeValidator(_severity)]
MutationSpec = Annotated[Text, AfterValidator(_mutation)]


class Section(BaseModel):
    """A mapping of the file: unknown keys are typos, values are taken as written."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Closure(Section):
    max_depth: Count = Field(description="Upstream hops followed above the datasets features and training runs read.")
    history_limit: Positive = Field(description="Operations and assertion runs read per entity.")
    freshness_property: Text | None = Field(
        description="Custom property read as a dataset's last refresh when no operation or lastModified exists.")
    feature_column_properties: Texts = Field(description="mlFeature custom properties that name its source column.")


class Production(Section):
    aliases: Texts = Field(description="Registry aliases that mark a model version production (any case).")
    stage_tags: Texts = Field(description="Stage tags that do the same (DataHub's MLflow source writes mlflow_<stage>).")
    live_statuses: Texts = Field(description="mlModelDeploymentProperties.status values that serve traffic.")


class Freshness(Section):
    default_window_hours: Number = Field(description="How long a dataset no window below matches may go unchanged.")
    windows: Annotated[dict[str, Number], BeforeValidator(_none_is_empty_mapping)] = Field(
        description="Dataset URN or name glob -> hours; the first match wins, a team's globs before the shipped ones.")


class Pii(Section):
    tags: Texts = Field(description="Tag names marking a dataset or column as personal data.")
    terms: Texts = Field(description="Glossary term names or ids doing the same.")


class Justification(Section):
    tags: Texts = Field(description="Tags on a model that document why it may use personal data.")
    properties: Texts = Field(description="Custom properties on a model that do the same.")


class CriticalPath(Section):
    min_fan_in: Positive = Field(description="Upstream datasets a table must merge to be on the critical path.")


class ProfileDrift(Section):
    row_count_change: Number = Field(description="|rows now - rows then| / rows then.")
    null_fraction_increase: Number = Field(description="Rise in the share of NULLs.")
    distinct_change: Number = Field(description="|distinct now - then| / then.")
    mean_shift: Number = Field(description="|mean now - mean then| in standard deviations then.")
    relative_mean_shift: Number = Field(
        description="The same as a share of |mean then|, when no standard deviation was profiled.")
    range_growth: Number = Field(
        description="Min or max beyond the old min..max by more than this share of that range.")


class BlastRadius(Section):
    at_risk_detectors: Texts = Field(description="Detectors whose findings put a dataset at risk.")
    min_severity: Level = Field(description="The least severe finding that does.")


class Weights(Section):
    CRITICAL: Number = Field(description="Points a CRITICAL finding adds to its model's score.")
    WARN: Number = Field(description="Points a WARN finding adds.")
    INFO: Number = Field(description="Points an INFO finding adds.")


class Scoring(Section):
    weights: Weights = Field(description="Points per finding, by severity.")
    deployment_factor: Number = Field(description="Each live deployment multiplies a model's score by (1 + this).")
    max_score: Positive = Field(description="The score's ceiling.")
    tiers: dict[str, Positive] = Field(
        min_length=1, description="Tier name -> lowest score reaching it (`replace: true` for a team's own tiers).")
    healthy_tier: Text = Field(description="The tier of a score of 0.")
    fail_tier: Text = Field(description="`recall scan` exits 1 when a model reaches this tier or a worse one.")

    @model_validator(mode="after")
    def _fail_tier_is_a_tier(self) -> "Scoring":
        names = [*self.tiers, self.healthy_tier]
        if self.fail_tier not in names:
            raise KeyMistake("fail_tier", f"must be one of {', '.join(names)}")
        return self


class Detector(Section):
    enabled: bool = Field(default=True, description="false: the detector does not run.")
    severity: dict[str, Level] = Field(description="Case -> severity of the findings it raises.")


class Retry(Section):
    attempts: Positive = Field(description="Tries per write within one scan, the first included.")
    backoff_seconds: Number = Field(description="Wait before the second try, doubled after each failure.")
    max_backoff_seconds: Number = Field(description="The longest single wait.")
    budget_seconds: Number = Field(
        description="The most one run waits between retries in all; then what failed fails (exit 3).")


class Slack(Section):
    enabled: bool = Field(description="Post incidents to Slack.")
    webhook_url_env: Text = Field(description="Environment variable holding the incoming-webhook URL.")


class Github(Section):
    enabled: bool = Field(description="Open an issue per incident.")
    repo: str = Field(description="owner/name the issues are opened in (required when enabled).")
    token_env: Text = Field(description="Environment variable holding a token allowed to write issues.")
    api_url: Text = Field(description="The GitHub API's base URL.")

    @model_validator(mode="after")
    def _repo_when_enabled(self) -> "Github":
        if self.enabled and not self.repo.strip():
            raise KeyMistake("repo", "must name owner/name when github is enabled")
        return self


class Notify(Section):
    slack: Slack
    github: Github


class Writeback(Section):
    tags: dict[str, Text] = Field(
        description=f"Tier -> tag on the model; every tag starting with {TAG_PREFIX!r} is Recall's to add and remove.")
    document_tier: Text = Field(description="Models at this tier or worse get a pre-mortem document.")
    incident_severity: Level = Field(description="Findings at this severity or worse open an incident.")
    retry: Retry = Field(description="Per write, within one scan; what still fails is retried next scan.")
    notify: Notify = Field(description="Opt-in; secrets are read from the environment variables named here.")

    @model_validator(mode="after")
    def _recall_tags(self) -> "Writeback":
        for tier, name in self.tags.items():
            if not name.startswith(TAG_PREFIX) or name == TAG_PREFIX:
                raise KeyMistake(f"tags.{tier}", f"must be a tag name starting with {TAG_PREFIX!r}")
            if name == MANAGED_TAG:
                raise KeyMistake(f"tags.{tier}", f"must not be {MANAGED_TAG!r}, which marks Recall's own entities")
        return self


class Acknowledgements(Section):
    max_days: Positive = Field(
        description="The longest an acknowledgement may last; `recall ack --until` past it exits 2, a longer one "
                    "read back is ignored and listed.")
    trusted_authors: Texts = Field(
        description="DataHub users (`alice` or `urn:li:corpuser:alice`) whose acknowledgement documents count "
                    "without Recall's signature; empty: only Recall's own.")
    key_env: Text = Field(
        description="Environment variable holding the key Recall signs its acknowledgements with, the same on "
                    "every instance sharing a graph; unset: this home's own key (state/state.key).")


class WarehouseSection(Section):
    dbt_project: Text | None = Field(
        description="The dbt project folder (`recall init --dbt-project` writes it); null: DBT_PROJECT_DIR or none.")
    profiles_dir: Text | None = Field(
        description="Where profiles.yml is; null: DBT_PROFILES_DIR, the project, ~/.dbt, as dbt looks.")
    target: Text | None = Field(description="The profile's output; null: DBT_TARGET, then the profile's own target.")
    read_timeout_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        description="Each row count and training-query replay (on a connection that can only read) is stopped "
                    "after this long.")


class LifecycleSeverity(Section):
    bands: dict[str, Number] = Field(
        description="Incident severity -> lowest share of a model's features poisoned that reaches it.")
    not_live_step_down: Count = Field(description="Levels lower for a model version no live deployment serves.")
    priorities: dict[str, Count] = Field(description="DataHub incident priority (0 critical .. 3 low) of each band.")
    ladder: dict[str, Level] = Field(
        description="Where each band stands on the one severity ladder (CRITICAL > WARN > INFO) that findings, "
                    "thresholds and the gate use; a more severe band never stands lower.")

    @model_validator(mode="after")
    def _bands_cover_zero_and_have_priorities(self) -> "LifecycleSeverity":
        if 0 not in self.bands.values():
            raise KeyMistake("bands", "must give one severity the share 0")
        for key, mapping, what in (("priorities", self.priorities, "a DataHub priority"),
                                   ("ladder", self.ladder, "a place on the ladder")):
            missing = [name for name in self.bands if name not in mapping]
            if missing:
                raise KeyMistake(f"{key}.{missing[0]}", f"is missing: every band needs {what}")
        ordered = sorted(self.bands, key=lambda name: -self.bands[name])
        for louder, quieter in zip(ordered, ordered[1:]):
            if self.ladder[louder].rank > self.ladder[quieter].rank:
                raise KeyMistake(f"ladder.{louder}", f"stands below {quieter}, a less severe band")
        return self


def _known_checks(names: list[str]) -> list[str]:
    unknown = sorted(set(names) - set(CHECK_NAMES))
    if unknown:
        raise ValueError(f"names unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECK_NAMES)}")
    return names


CheckNames = Annotated[Texts, AfterValidator(_known_checks)]


class Gate(Section):
    disabled: CheckNames = Field(description="Checks the retrain gate skips.")
    advisory: CheckNames = Field(
        description="Checks whose failure is shown (WARN) but does not refuse the retrain.")
    min_severity: Level = Field(description="Scan findings at or above this fail the detector-backed checks.")
    max_row_drop: Share = Field(description="A training input that lost more than this share of its rows fails.")
    min_feature_coverage: Share = Field(
        description="Share of features that must resolve to an existing column of their source.")
    block_unknown: bool = Field(
        description="Whether an UNKNOWN blind-window verdict on the judged version blocks like CONTAMINATED.")
    required: CheckNames = Field(
        description="Checks that must measure: one skipped makes the verdict UNVERIFIED (exit 4).")
    block_unverified: bool = Field(
        description="The Dagster gate refuses a retrain on UNVERIFIED (and when no version can be found).")


class Lifecycle(Section):
    failing_results: Texts = Field(
        description="Assertion results that mean the data is bad (ERROR: the test itself broke).")
    table_level: bool = Field(description="A failing assertion naming no column poisons every column of its table.")
    name_matching: bool = Field(
        description="A feature with no source-column property matches a poisoned column by its name.")
    severity: LifecycleSeverity = Field(description="Per model, from the share of its features poisoned.")
    classification: dict[str, Text] = Field(
        description="Glob over a test's kind (dbt test name or type) -> failure mode; the first match wins, "
                    "a team's globs before the shipped ones.")
    default_classification: Text = Field(description="The failure mode of a test no glob matches.")
    training_rows_metric: Text = Field(
        description="Prefix of the metrics a training run logs per table it read: <prefix><schema>.<table>.")
    row_counts: dict[str, Text] = Field(
        description='Glob over "<platform>:<dataset name>" -> SQLAlchemy URL or env:VARIABLE: where the gate '
                    "counts a training input's rows when no DataHub profile says; the first match wins.")
    gate: Gate = Field(description="`recall gate` and the blocking check on each training asset.")


class Query(Section):
    artifact: Text = Field(description="Run artifact holding the training query.")
    connection: Annotated[str, StringConstraints(strip_whitespace=True)] = Field(
        description='SQLAlchemy URL or env:VARIABLE holding one; "": the warehouse\'s dbt profile, else off.')
    input_prefix: Annotated[str, StringConstraints(strip_whitespace=True)] = Field(
        description='Result columns are named <prefix><model input>; "": named as the inputs.')
    label_prefix: Text = Field(description="The one result column starting with this holds the label.")
    max_rows: Positive = Field(description="Rows drawn (seeded) from the result.")


class Evaluation(Section):
    artifact: Text = Field(description="Run artifact holding the model's inputs and the label (.parquet or .csv).")
    label_column: Text = Field(description="The column of that file holding the true outcome.")
    query: Query = Field(description="When the run logged no such rows: rerun the SQL it logged on the warehouse.")


class Registry(Section):
    timeout_seconds: Positive = Field(description="One HTTP request to the tracking server; then exit 3.")
    retries: Annotated[int, Field(ge=0, le=9)] = Field(description="Tries again after a failed request (MLflow allows 9).")


class WarnLine(Section):
    metric_loss: Number = Field(description="Relative loss of the primary metric that warns.")
    flip_rate: Share = Field(description="Share of predictions flipping that warns.")


class BlockLine(WarnLine):
    failure_rate: Share = Field(description="More than this share of rows failing inference blocks.")


class Policy(Section):
    warn: WarnLine
    block: BlockLine

    @model_validator(mode="after")
    def _warn_below_block(self) -> "Policy":
        if self.warn.metric_loss > self.block.metric_loss or self.warn.flip_rate > self.block.flip_rate:
            raise KeyMistake("warn", "must not be above impact.policy.block")
        return self


def _drift_changes(mapping: dict[str, str]) -> dict[str, str]:
    unknown = sorted(set(mapping) - set(DRIFT_CHANGES))
    if unknown:
        raise KeyMistake(unknown[0], f"is not a change Recall tells apart; known: {', '.join(DRIFT_CHANGES)}")
    return mapping


class Measured(Section):
    enabled: bool = Field(description="Replay a scan's findings on the models they reach.")
    production_only: bool = Field(description="Only on production model versions.")
    min_severity: Level = Field(description="The least severe finding replayed.")
    schema_drift: Annotated[dict[str, MutationSpec], AfterValidator(_drift_changes)] = Field(
        description=f"The column's change ({', '.join(DRIFT_CHANGES)}) -> the mutation replaying it.")
    failing_assertion: dict[str, MutationSpec] = Field(
        description="The failing test's class (lifecycle.classification) -> the mutation, on the failed share of "
                    "rows; a class not named is not replayed.")
    block_severity: Level = Field(description="A BLOCK raises the finding to this.")
    pass_severity: Level = Field(description="A PASS lowers it to this, with the measurement as evidence.")


class Impact(Section):
    evaluation: Evaluation = Field(description="The rows a model is measured on: what its training run logged.")
    registry: Registry = Field(description="How models and runs are read from MLflow.")
    min_rows: Positive = Field(description="Fewer evaluation rows than this is INCOMPLETE.")
    seed: Count = Field(description="The rows mutated, shuffles and the bootstrap all draw from it.")
    bootstrap: Count = Field(description="Paired bootstrap replicates for the interval of the metric's delta.")
    confidence: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        description="Of that interval.")
    batch_rows: Positive = Field(description="Rows per inference call; a call that raises fails its rows.")
    flip_tolerance: Number = Field(
        description="A regressor's prediction flips when it moves more than this x the spread of its predictions.")
    policy: Policy = Field(
        description="WARN from the warn line; BLOCK on a significant loss, or flips or failures past the block line.")
    measured: Measured = Field(
        description="After a scan, a finding on a column reaching a production model is replayed on the model.")


class ProtectWeights(Section):
    tests: Number = Field(description="Points for dbt or DataHub tests on the dataset's columns.")
    freshness: Number = Field(description="Points for a dataset changed within its freshness window.")
    owner: Number = Field(description="Points for a named owner.")
    documentation: Number = Field(description="Points for a description.")
    incidents: Number = Field(description="Points for no recent incidents (see incident_memory).")

    @model_validator(mode="after")
    def _add_up_to_100(self) -> "ProtectWeights":
        total = sum(getattr(self, c) for c in COMPONENTS)
        if abs(total - 100) > 1e-9:
            raise ValueError(f"must add up to 100, not {total:g}")
        return self


class Protect(Section):
    weights: ProtectWeights = Field(description="Points of the 0-100 reliability score, per component.")
    incident_memory: Positive = Field(description="Past incidents on a dataset that take its incident points to zero.")
    suggested_tests: Texts = Field(description="dbt generic tests suggested for an untested critical column.")
    top: Positive = Field(description="Gaps listed (the JSON keeps them all).")


class Metric(Section):
    higher_is_better: bool = Field(description="false for an error metric (mae, rmse).")
    tolerance: Number = Field(description="How much worse than the baseline still passes.")
    relative: bool = Field(default=False, description="The tolerance is a share of the baseline's value.")


class Hypotheses(Section):
    margin: Number = Field(description="INCONCLUSIVE when the best two scores are closer than this.")
    floor: Number = Field(description="INCONCLUSIVE when the best score is below it.")
    weights: dict[Literal["temporal", "lineage", "fields", "size", "corroboration"], Number] = Field(
        description=f"Weight of each signal ({', '.join(SIGNALS)}); a signal left out weighs 0.")
    counter_penalty: Number = Field(description="Taken off a hypothesis per piece of evidence against it.")


class RepairDbt(Section):
    project: Text | None = Field(description="The dbt project's directory inside `project`; null: none proposed.")
    command: Texts = Field(
        description='Run in the copy to run the added test, "{select}" and "{python}" filled in.')


class Repair(Section):
    project: Text = Field(description="The team's project, relative to where recall runs.")
    allowed: Texts = Field(description="Globs of project files a repair may edit; empty refuses every edit.")
    protected: Texts = Field(description="Never edited, whatever `allowed` says.")
    max_changed_lines: Positive = Field(description="The largest edit a repair may propose.")
    min_recovery: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        description="Proven: the biggest drop back within tolerance or this share of it won back.")
    command: Texts = Field(
        description='Run in the copy after the edit ("{model}", "{python}" filled in): retrains and prints the '
                    "metrics as its last line of JSON; empty: proposed, not proven.")
    retrain: Texts = Field(
        description='Run in the copy to retrain on the data as it stood before a failure ("{before}" too).')
    dbt: RepairDbt = Field(description="Adding the missing dbt test upstream of a failing one.")
    timeout_seconds: Annotated[float, Field(ge=1, allow_inf_nan=False)] = Field(
        description="The most one repair command may run.")
    ignore: Texts = Field(description="Left out of the copy.")


class Diagnose(Section):
    metrics: dict[str, Metric] = Field(
        description="A candidate worse than its baseline by more than the tolerance regresses.")
    primary: Texts = Field(description="Breaks ties between metrics that lost the same share of their skill.")
    hypotheses: Hypotheses
    code_tags: Texts = Field(description="Run tags whose change means the training code changed.")
    transform_tag_prefix: Text = Field(
        description='Run tag per feature: "<module>:<function>@<hash>" of the code computing it.')
    repair: Repair = Field(description="Repairs are edited and proven in a temporary copy, never in the project.")

    @model_validator(mode="after")
    def _primary_metrics_exist(self) -> "Diagnose":
        missing = [m for m in self.primary if m not in self.metrics]
        if missing:
            raise KeyMistake("primary", f"names {', '.join(missing)}, which diagnose.metrics lacks")
        return self


class Narration(Section):
    rewrite_command: str | None = Field(
        description="Opt-in: a command given a paragraph on stdin whose stdout is shown instead at the terminal.")
    timeout_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        description="The rewrite command's time; then the template is shown.")


class Dagster(Section):
    scan_after: Texts = Field(description='Asset keys ("a/b") the scan and the incident sync run after.')
    mlflow_models: Texts = Field(description="Registered models the MLflow sensor watches; empty: all of them.")
    sensor_interval_seconds: Annotated[int, Field(ge=30)] = Field(description="How often the sensors look.")
    nightly_scan_cron: Text = Field(description="UTC.")
    scan_shards: Positive = Field(description="> 1: the scan runs as that many partitions, merged by a sensor.")
    dbt_recipe: Text | None = Field(
        description="The dbt recipe (`recall init` writes recipes/dbt.yml) a `dbt_metadata` asset runs after the "
                    "team's dbt assets, so what dagster-dbt built and tested reaches the graph before each scan; "
                    "unset: no such asset.")
    webserver_url: WebAddress = Field(
        description="The Dagster UI's address: the blind window, the gate and incidents link the run that trained "
                    "each version there; empty: they give the run id alone.")


class RecallFile(Section):
    """The whole file, once every layer is laid."""

    closure: Closure
    production: Production
    freshness: Freshness
    pii: Pii
    justification: Justification
    label_tables: Texts = Field(description="Dataset URN or name globs read by training only, by design.")
    critical_path: CriticalPath
    profile_drift: ProfileDrift = Field(description="A profiled column a feature reads, now against training time.")
    blast_radius: BlastRadius
    scoring: Scoring = Field(
        description="score = min(max_score, sum(weight) * (1 + deployment_factor * live deployments)).")
    detectors: dict[str, Detector] = Field(
        description="Every detector by name, each case's severity; a detector or case left out is refused.")
    writeback: Writeback = Field(description="`recall scan --write` and the datahub_writeback asset.")
    acknowledgements: Acknowledgements = Field(
        description="`recall ack`: how long an acceptance may last, and whose, from the graph, count.")
    warehouse: WarehouseSection = Field(description="The team's warehouse, reached through its dbt profile.")
    lifecycle: Lifecycle = Field(description="Data incidents, blind window and retrain gate.")
    impact: Impact = Field(description="`recall impact` and the measured severity of scan findings.")
    protect: Protect = Field(description="`recall protect`: reliability of each dataset on a production path.")
    diagnose: Diagnose = Field(description="`recall diagnose`: the metric gate, ranked causes, a proven repair.")
    narration: Narration = Field(description="The paragraphs people read for findings, verdicts and blind windows.")
    dagster: Dagster = Field(description="The `recall` code location and its sensors.")

    @model_validator(mode="after")
    def _writeback_names_real_tiers(self) -> "RecallFile":
        known = [*self.scoring.tiers, self.scoring.healthy_tier]
        for key, tier in [*((f"tags.{t}", t) for t in self.writeback.tags), ("document_tier", self.writeback.document_tier)]:
            if tier not in known:
                raise KeyMistake(f"writeback.{key}", f"names tier {tier!r}, which scoring.tiers does not have "
                                                     f"({', '.join(known)}): name your own tiers there too")
        return self

