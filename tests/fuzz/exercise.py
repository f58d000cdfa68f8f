"""Put one estate through every read path a team runs, as they run it: the CLI on a real Lite file."""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import yaml
from click.testing import CliRunner, Result
from datahub.emitter.mcp import MetadataChangeProposalWrapper

from recall_dagster.cli import cli
from recall_dagster.graph import LiteGraph

# Every command reads the graph; incidents sync and --dry-run plan writes too. Replays on MLflow models are an
# impact test, not the read path: off here.
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("scan", "--json", "--all"),
    ("scan", "--dry-run", "--all"),
    ("gate", "fraud"),
    ("gate", "churn", "--json"),
    ("blind-window", "--json"),
    ("incidents", "sync", "--json"),
    ("protect", "--json"),
)
OVERLAY = {"impact": {"measured": {"enabled": False}}}
EXPECTED_CODES = {0, 1, 2, 3, 4}  # 2 and 3 come with a message: a RecallError, not a crash


@dataclass
class Outcome:
    crashes: list[str] = field(default_factory=list)  # command: the traceback of what escaped
    recall_errors: int = 0  # commands that stopped with a clear message (exit 2 or 3)
    seconds: float = 0.0


def write_lite(mcps: Sequence[MetadataChangeProposalWrapper], path: Path) -> Path:
    """A fresh DataHub Lite file at ``path`` holding ``mcps``, written as any DataHub writer would."""
    graph = LiteGraph(path)
    try:
        graph.emit_mcps(mcps)
    finally:
        graph.close()
    return path


def crash(command: Sequence[str], result: Result) -> str | None:
    """What escaped ``recall command``, with its traceback: an exception that is no exit, or an exit code no
    documented outcome has; None when it answered or stopped with a message."""
    escaped = result.exception is not None and not isinstance(result.exception, SystemExit)
    if not escaped and result.exit_code in EXPECTED_CODES:
        return None
    trace = "".join(traceback.format_exception(result.exception)) if result.exception else result.output
    return f"{' '.join(command)} (exit {result.exit_code}):\n{trace}"


def exercise(mcps: Sequence[MetadataChangeProposalWrapper], workdir: Path) -> Outcome:
    """Write ``mcps`` to a fresh Lite file under ``workdir``, run every command on it, and tell what happened."""
    workdir.mkdir(parents=True, exist_ok=True)
    graph_path, overlay = write_lite(mcps, workdir / "graph.db"), workdir / "recall.yaml"
    overlay.write_text(yaml.safe_dump(OVERLAY))
    outcome = Outcome()
    env = {"RECALL_HOME": str(workdir / "home"), "RECALL_GRAPH": str(graph_path), "RECALL_CONFIG": str(overlay),
           "MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'no-mlflow.db'}"}
    started = time.perf_counter()
    for command in COMMANDS:
        result = CliRunner().invoke(cli, list(command), env=env)
        crashed = crash(command, result)
        if crashed:
            outcome.crashes.append(crashed)
        elif result.exit_code in (2, 3):
            outcome.recall_errors += 1
    outcome.seconds = time.perf_counter() - started
    return outcome
