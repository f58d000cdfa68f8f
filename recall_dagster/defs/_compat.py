"""Every use of Dagster's internals, in one place, each with the reason no public API serves (Dagster 1.13).

Anything imported from ``dagster._…`` or ``dagster_shared`` may change in any
Dagster release. Keeping the uses here means an upgrade has one module to
re-verify, and ``tests/dagster/test_dagster_compat.py`` fails loudly when the
installed Dagster, or one that CI installs, is not a release these were verified against.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping

from dagster import (
    AssetCheckKey,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    ComponentLoadContext,
    DagsterInstance,
    Definitions,
    In,
    OpDefinition,
    Out,
)

# define_asset_job's return type is not exported; Recall's job factories are typed with it.
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

# The run tag Dagster sets on every run of a backfill, and the one Dagster+ sets to the user who launched a run;
# there is no public constant or accessor for either.
from dagster._core.storage.tags import BACKFILL_ID_TAG, USER_TAG

# The ends of pyproject's Dagster range that CI runs: the demo's lock and the newest team environments (1.13.27),
# the oldest team environment (1.13.0); see envs/ and docs/install.md.
VERIFIED_WITH = ("1.13.0", "1.13.27")

__all__ = ["BACKFILL_ID_TAG", "USER_TAG", "VERIFIED_WITH", "UnresolvedAssetJobDefinition", "asset_graph_of",
           "check_metadata", "compute_fn_of", "freshness_window_hours", "latest_check_executions", "other_components_defs",
           "with_compute_and_input"]


def latest_check_executions(instance: DagsterInstance, keys: Iterable[AssetCheckKey]) -> dict[AssetCheckKey, Any]:
    """The newest execution record of each check, through the instance's public per-key accessor."""
    found = {key: instance.get_latest_asset_check_evaluation_record(key) for key in keys}
    return {key: record for key, record in found.items() if record is not None}


def freshness_window_hours(node: Any) -> float | None:
    """The fail window, in hours, of the time-window ``FreshnessPolicy`` an asset declares
    (``FreshnessPolicy.time_window(fail_window=...)``); None for none, or a cron policy (no fixed window).

    Read from a node of :func:`asset_graph_of` (internal), through its
    ``freshness_policy_or_from_metadata`` (the one accessor that also reads a
    policy kept in metadata before Dagster 1.11); the policy's ``fail_window`` is
    Dagster's serializable delta, which only ``to_timedelta()`` turns into time.
    """
    window = getattr(node.freshness_policy_or_from_metadata, "fail_window", None)
    return window.to_timedelta().total_seconds() / 3600 if window is not None else None


def asset_graph_of(context: AssetExecutionContext) -> Any:
    """The code location's asset graph in a launched run, the job's own in an in-process one.

    ``context.repository_def`` raises a ``CheckError`` (dagster_shared) when the
    run has no repository (``execute_in_process``); the job's asset layer is then
    the only graph there is, and neither it nor the error is public.
    """
    from dagster_shared.check import CheckError

    try:
        return context.repository_def.asset_graph
    except CheckError:
        return context.job_def.asset_layer.asset_graph


def check_metadata(asset_graph: Any) -> list[tuple[AssetCheckKey, Mapping[str, Any]]]:
    """Every asset check of a graph from :func:`asset_graph_of`, with the metadata its spec declares (the
    graph's check nodes are internal)."""
    return [(node.key, dict(node.metadata or {})) for node in asset_graph.asset_check_nodes]


def compute_fn_of(op: Any) -> Callable[..., Any] | None:
    """The function an ``@asset`` of one op was written as; None for a graph-backed asset or another kind of op
    (its compute function is wrapped in ``DecoratedOpFunction``, not public)."""
    from dagster._core.definitions.decorators.op_decorator import DecoratedOpFunction

    if not isinstance(op, OpDefinition) or not isinstance(op.compute_fn, DecoratedOpFunction):
        return None
    return op.compute_fn.decorated_fn


def with_compute_and_input(
    mapped: AssetsDefinition, compute: Callable[..., Any], input_key: AssetKey, resources: Iterable[str]
) -> AssetsDefinition:
    """``mapped`` (one op) computed by ``compute``, with ``input_key`` mapped to its input and ``resources``
    required too.

    No public API replaces an asset's compute function while keeping its specs,
    checks, partitions and metadata; and ``map_asset_specs`` adds a dependency
    and the op's input but, in 1.13.27, leaves ``keys_by_input_name`` without it,
    so a job would run the two steps in any order (measured). Hence the internal
    constructors and input naming.
    """
    from dagster._core.definitions.assets.definition.assets_definition import stringify_asset_key_to_input_name
    from dagster._core.definitions.decorators.op_decorator import DecoratedOpFunction

    op: Any = mapped.node_def  # one op: the caller checked with compute_fn_of
    attributes: dict[str, Any] = mapped.get_attributes_dict()
    keys_by_input: Mapping[str, AssetKey] = attributes["keys_by_input_name"]
    attributes["keys_by_input_name"] = {**keys_by_input, stringify_asset_key_to_input_name(input_key): input_key}
    attributes["node_def"] = OpDefinition.dagster_internal_init(
        compute_fn=DecoratedOpFunction(compute),
        name=op.name,
        ins={i.name: In.from_definition(i) for i in op.input_defs},
        outs={o.name: Out.from_definition(o) for o in op.output_defs},
        description=op.description,
        config_schema=op.config_schema,
        required_resource_keys={*op.required_resource_keys, *resources},
        tags=op.tags,
        version=None,
        retry_policy=op.retry_policy,
        code_version=None,  # each output keeps its own, the only place an asset reads it
        pool=op.pool,
    )
    return AssetsDefinition.dagster_internal_init(**attributes)


def other_components_defs(context: ComponentLoadContext) -> Iterator[Definitions]:
    """The definitions of every other component of the project a component (``context``) is loaded in.

    ``ComponentLoadContext.build_defs`` is public, but nothing public lists the
    project's components: the tree of declarations (``component_tree``, each
    decl's ``loc`` and children) is walked, down the folders holding this
    component only, so that none is built from inside its own build. Dagster
    caches each build, so the folder's own pass builds nothing twice.
    """
    mine = context.path
    pending = [context.component_tree.find_decl_at_path(context.defs_module_path)]
    while pending:
        decl = pending.pop()
        here = decl.context.path
        if here == mine:
            continue
        if mine.is_relative_to(here):
            pending.extend(decl.iterate_child_component_decls())
        else:
            # Dagster 1.13.0 names a declaration's place `path` (a ComponentPath), later 1.13 releases `loc`;
            # build_defs takes either's own.
            yield context.build_defs(decl.loc if hasattr(decl, "loc") else decl.path)  # type: ignore[attr-defined]  # `path`: Dagster 1.13.0 only
