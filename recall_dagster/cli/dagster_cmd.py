"""``recall dagster``: the Dagster webserver and daemon on this stack, with DAGSTER_HOME under RECALL_HOME."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import click

from recall_dagster.cli import cli
from recall_dagster.errors import ConfigError
from recall_dagster.settings import Settings

# Dagster's instance settings for the embedded stack; a team's dagster.yaml (Postgres storage,
# a K8s or Celery run launcher) replaces this file and nothing else.
INSTANCE_YAML = "telemetry:\n  enabled: false\n"


def dagster_home(settings: Settings) -> Path:
    """RECALL_HOME/dagster, with an instance file written once and never overwritten."""
    home = settings.ensure_home() / "dagster"
    home.mkdir(exist_ok=True)
    instance = home / "dagster.yaml"
    if not instance.exists():
        instance.write_text(INSTANCE_YAML)
    return home


def ensure_port_free(host: str, port: int) -> None:
    """Fail before Dagster starts, with the fix, rather than after it printed a bind traceback."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as err:
            raise ConfigError(
                f"port {port} on {host} is already in use ({err.strerror}); "
                "stop what holds it or pass --port to `recall dagster`"
            ) from err


@cli.command("dagster")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the webserver listens on.")
@click.option("--port", default=3000, show_default=True, help="Port the webserver listens on.")
@click.option(
    "--workspace", "-w", type=click.Path(dir_okay=False, exists=True), default=None,
    help="A Dagster workspace file [default: ./workspace.yaml when present, else Recall's own code location].",
)
def dagster_command(host: str, port: int, workspace: str | None) -> None:
    """Start `dagster dev` (webserver and daemon): scans, reactions and gates in the UI."""
    ensure_port_free(host, port)
    settings = Settings.from_env()
    env = {**os.environ, "RECALL_HOME": str(settings.home), "DAGSTER_HOME": str(dagster_home(settings))}
    executable = str(Path(sys.executable).with_name("dagster"))
    chosen = workspace or ("workspace.yaml" if Path("workspace.yaml").is_file() else None)
    target = ["-w", chosen] if chosen else ["-m", "recall_dagster.definitions"]
    os.execve(executable, [executable, "dev", *target, "-h", host, "-p", str(port)], env)
