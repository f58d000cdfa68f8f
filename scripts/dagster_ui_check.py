"""Start `dagster dev -w workspace.yaml`, list what its GraphQL endpoint serves, optionally screenshot the asset graph.

Shows that the real webserver and daemon load Recall's definitions on the
embedded stack: every asset with its checks (blocking or not), the sensors and
the schedules, as the UI itself asks for them. Nothing needs to be running
beforehand; DAGSTER_HOME lives under RECALL_HOME as with `recall dagster`.

    .venv/bin/python scripts/dagster_ui_check.py [--screenshot docs/dagster-asset-graph.png]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from recall_dagster.cli.dagster_cmd import dagster_home
from recall_dagster.settings import Settings

REPO = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 180
LOCATIONS = ("recall", "demo_estate")  # workspace.yaml's code locations
QUERY = """
query Recall($recall: RepositorySelector!, $demo_estate: RepositorySelector!) {
  assetNodes {
    assetKey { path }
    groupName
    assetChecksOrError { ... on AssetChecks { checks { name blocking } } }
  }
  recall_sensors: sensorsOrError(repositorySelector: $recall) { ... on Sensors { results { name sensorState { status } } } }
  recall_schedules: schedulesOrError(repositorySelector: $recall) { ... on Schedules { results { name cronSchedule } } }
  demo_estate_sensors: sensorsOrError(repositorySelector: $demo_estate) {
    ... on Sensors { results { name sensorState { status } } }
  }
  demo_estate_schedules: schedulesOrError(repositorySelector: $demo_estate) {
    ... on Schedules { results { name cronSchedule } }
  }
}
"""
VARIABLES = {name: {"repositoryLocationName": name, "repositoryName": "__repository__"} for name in LOCATIONS}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def dagster_dev(recall_home: Path, port: int) -> Iterator[str]:
    """`dagster dev` on ``port`` until the block ends; yields the webserver's base URL once GraphQL answers."""
    home = dagster_home(Settings.from_env(home=recall_home))
    env = {**os.environ, "RECALL_HOME": str(recall_home), "DAGSTER_HOME": str(home)}
    dagster = str(Path(sys.executable).with_name("dagster"))
    command = [dagster, "dev", "-w", str(REPO / "workspace.yaml"), "-p", str(port)]
    log = open(recall_home / "dagster-dev.log", "w")
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_graphql(url, process, recall_home / "dagster-dev.log")
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the webserver, the daemon and the code server
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def graphql(url: str, query: str = QUERY) -> dict[str, Any]:
    body = {"query": query, "variables": VARIABLES if query is QUERY else {}}
    request = urllib.request.Request(
        f"{url}/graphql", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        payload = json.load(response)
    if payload.get("errors"):
        raise RuntimeError(f"GraphQL errors: {payload['errors']}")
    return payload["data"]


def summary(data: dict[str, Any]) -> dict[str, Any]:
    """Asset keys with their checks, and each location's sensors and schedules, flattened for asserting."""
    assets = {}
    for node in data["assetNodes"]:
        checks = (node.get("assetChecksOrError") or {}).get("checks", [])
        assets["/".join(node["assetKey"]["path"])] = {c["name"]: c["blocking"] for c in checks}
    return {
        "assets": assets,
        "sensors": {
            where: {s["name"]: s["sensorState"]["status"] for s in data[f"{where}_sensors"]["results"]}
            for where in LOCATIONS
        },
        "schedules": {
            where: {s["name"]: s["cronSchedule"] for s in data[f"{where}_schedules"]["results"]} for where in LOCATIONS
        },
    }


def screenshot(url: str, target: Path, asset: str = "datahub_writeback", depth: int = 10) -> None:
    """Everything upstream of ``asset`` (``a/b`` key), rendered by headless Chromium, groups expanded."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    target.parent.mkdir(parents=True, exist_ok=True)
    graphql(url, "mutation { setNuxSeen }")  # the first-visit welcome dialog would cover the graph
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--window-size=2400,1350", "--virtual-time-budget=30000", f"--screenshot={target}",
         f"{url}/assets/{asset}?view=lineage&lineageScope=upstream&lineageDepth={depth}"],
        check=True, capture_output=True, timeout=180,
    )


def _wait_for_graphql(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {process.returncode}; see {log}")
        try:
            if graphql(url)["assetNodes"]:
                return
        except (OSError, RuntimeError, KeyError):
            pass
        time.sleep(2)
    raise RuntimeError(f"dagster dev did not serve the definitions within {STARTUP_TIMEOUT_S}s; see {log}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recall-home", type=Path, default=Path(os.environ.get("RECALL_HOME", REPO / ".recall")))
    parser.add_argument("--screenshot", type=Path, help="save a PNG of the asset graph here")
    parser.add_argument("--asset", default="datahub_writeback", help="the asset (a/b) whose upstream is pictured")
    parser.add_argument("--depth", type=int, default=10, help="how many levels upstream of --asset to show")
    args = parser.parse_args()
    with dagster_dev(args.recall_home.resolve(), free_port()) as url:
        print(json.dumps(summary(graphql(url)), indent=2))
        if args.screenshot:
            screenshot(url, args.screenshot, args.asset, args.depth)
            print(f"asset graph saved to {args.screenshot}")


if __name__ == "__main__":
    main()
