"""Start `dagster dev -w workspace.yaml`, list what its GraphQL endpoint serves, optionally triage a broken
estate as an operator would and picture the pages.

Shows that the real webserver and daemon load Recall's definitions on the
embedded stack: every asset with its checks (blocking or not), the sensors and
the schedules, as the UI itself asks for them. Nothing needs to be running
beforehand; DAGSTER_HOME lives under RECALL_HOME as with `recall dagster`.

With ``--triage`` (on an estate after ``python -m seed break``) it launches the
scan and ``retrain_models`` from the webserver, as the launchpad does, and
reports what the UI then shows an operator: the model's own verdict check and
its line, the refused retrain (run status, tags, failed and skipped steps, error
lines), the gate's check, and the one-line summary of each of Recall's assets.
``--pictures DIR`` saves those pages as headless Chromium renders them.

    .venv/bin/python scripts/dagster_ui_check.py [--screenshot docs/dagster-asset-graph.png]
    .venv/bin/python scripts/dagster_ui_check.py --triage [--pictures docs]
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
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import yaml

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
    picture(url, f"/assets/{asset}?view=lineage&lineageScope=upstream&lineageDepth={depth}", target, "2400,1350")


def picture(url: str, page: str, target: Path, size: str = "1600,1000") -> None:
    """``page`` of the webserver at ``url`` as headless Chromium renders it, saved to ``target``."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
    target.parent.mkdir(parents=True, exist_ok=True)
    ask(url, "mutation { setNuxSeen }")  # the first-visit welcome dialog would cover the page
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         f"--window-size={size}", "--virtual-time-budget=30000", f"--screenshot={target}", f"{url}{page}"],
        check=True, capture_output=True, timeout=180,
    )


LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
  }
}
"""
RUN = "query Run($runId: ID!) { runOrError(runId: $runId) { ... on Run { status tags { key value } } } }"
LOGS = """
query Logs($runId: ID!) {
  logsForRun(runId: $runId, limit: 10000) {
    ... on EventConnection {
      events {
        __typename ... on MessageEvent { message level stepKey } ... on ExecutionStepFailureEvent { error { message } }
      }
    }
  }
}
"""
CHECK = """
query Check($key: AssetKeyInput!, $name: String!) {
  assetCheckExecutions(assetKey: $key, checkName: $name, limit: 1) {
    runId status evaluation { description severity }
  }
}
"""
MATERIALIZED = """
query Latest($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    ... on Asset {
      assetMaterializations(limit: 1) {
        runId metadataEntries { label ... on TextMetadataEntry { text } ... on UrlMetadataEntry { url } }
      }
    }
  }
}
"""
RUN_TIMEOUT_S = 600


def ask(url: str, query: str, **variables: Any) -> dict[str, Any]:
    """One GraphQL query with its variables, as the UI sends it."""
    request = urllib.request.Request(
        f"{url}/graphql", data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        payload = json.load(response)
    if payload.get("errors"):
        raise RuntimeError(f"GraphQL errors: {payload['errors']}")
    return payload["data"]


def launched(url: str, location: str, job: str, run_config: dict[str, Any] | None = None,
             repository: str = "__repository__") -> dict[str, Any]:
    """Launch ``job`` from the webserver, as its launchpad does, and wait for the run to end: its id, status,
    Recall's tags, its failed and skipped steps, their errors and the run's error lines."""
    selector = {"repositoryLocationName": location, "repositoryName": repository, "jobName": job}
    answer = ask(url, LAUNCH, params={"selector": selector, "runConfigData": run_config or {}})["launchRun"]
    if answer["__typename"] != "LaunchRunSuccess":
        raise RuntimeError(f"launching {job} failed: {answer}")
    run_id = answer["run"]["runId"]
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while (run := ask(url, RUN, runId=run_id)["runOrError"])["status"] not in ("SUCCESS", "FAILURE", "CANCELED"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{job} run {run_id} did not end within {RUN_TIMEOUT_S}s")
        time.sleep(2)
    events = ask(url, LOGS, runId=run_id)["logsForRun"]["events"]
    return {
        "run_id": run_id,
        "status": run["status"],
        "tags": {t["key"]: t["value"] for t in run["tags"] if t["key"].startswith("recall/")},
        "failed_steps": sorted({e["stepKey"] for e in events if e["__typename"] == "ExecutionStepFailureEvent"}),
        "failures": [e["error"]["message"] for e in events
                     if e["__typename"] == "ExecutionStepFailureEvent" and e.get("error")],
        "skipped_steps": sorted({e["stepKey"] for e in events if e["__typename"] == "ExecutionStepSkippedEvent"}),
        "errors": [e["message"] for e in events if e.get("level") == "ERROR" and e["__typename"] == "LogMessageEvent"],
    }


def latest_check(url: str, asset: str, check: str) -> dict[str, Any] | None:
    """The newest execution of ``check`` on ``asset`` (``a/b``): its status and one line, or None."""
    executions = ask(url, CHECK, key={"path": asset.split("/")}, name=check)["assetCheckExecutions"]
    if not executions:
        return None
    [latest] = executions
    evaluation = latest["evaluation"] or {}
    return {"status": latest["status"], "description": evaluation.get("description"), "run_id": latest["runId"]}


def summaries(url: str, group: str = "recall") -> dict[str, dict[str, str]]:
    """The newest materialization of each asset in ``group`` (Recall's), its text and link metadata in the
    order the UI lists it."""
    nodes = ask(url, QUERY, **VARIABLES)["assetNodes"]
    seen = {}
    for asset in sorted("/".join(n["assetKey"]["path"]) for n in nodes if n["groupName"] == group):
        found = ask(url, MATERIALIZED, key={"path": asset.split("/")})["assetOrError"].get("assetMaterializations")
        if found:
            seen[asset] = {e["label"]: e.get("text", e.get("url")) for e in found[0]["metadataEntries"]
                           if "text" in e or "url" in e}
    return seen


def from_link(link: str) -> tuple[str, str, str, dict[str, Any]]:
    """What a launchpad link opens: its code location, repository, job and the run config it fills in."""
    address = urllib.parse.urlparse(link)
    _, _, where, _, job, *_ = address.path.split("/")
    repository, location = urllib.parse.unquote(where).split("@")
    [config] = urllib.parse.parse_qs(address.query)["config"]
    return location, repository, job, yaml.safe_load(config)


def triage(url: str, model: str = "fraud_detector", by: str = "triage@recall.example") -> dict[str, Any]:
    """The demo's triage from the UI after ``seed break``: scan, then retrain, then what the pages say; last,
    the blind window's rollback link launched as it fills the launchpad, then with a name typed in."""
    scan = launched(url, "recall", "recall_scan")
    retrain = launched(url, "demo_estate", "retrain_models")
    training, gate = f"ml/{model}", f"ml/{model}_retrain_gate"
    seen = {
        "scan": scan,
        "retrain": retrain,
        "verdict": latest_check(url, training, "recall_verdict"),
        "gate": latest_check(url, gate, "retrain_gate"),
        "metric_gate": latest_check(url, training, "metric_gate"),
        "summaries": summaries(url),
    }
    link = seen["summaries"].get("blind_window", {}).get(f"rollback: {model}")
    if link:
        location, repository, job, config = from_link(link)
        seen["rollback_as_filled"] = launched(url, location, job, config, repository)
        config["ops"]["roll_back"]["config"]["by"] = by
        seen["rollback_named"] = launched(url, location, job, config, repository)
    return seen


def pictures(url: str, found: dict[str, Any], folder: Path, model: str = "fraud_detector") -> list[Path]:
    """The pages an operator opens in triage, as Chromium renders them."""
    pages = {
        "dagster-triage-model.png": f"/assets/ml/{model}?view=checks&checkDetail=recall_verdict",
        "dagster-triage-refusal.png": f"/runs/{found['retrain']['run_id']}?logs=refuses",
        "dagster-triage-gate.png": f"/assets/ml/{model}_retrain_gate?view=checks&checkDetail=retrain_gate",
        "dagster-triage-scores.png": "/assets/risk_scores",
        "dagster-triage-launchpad.png": found["summaries"]["blind_window"][f"rollback: {model}"],
    }
    for name, page in pages.items():
        picture(url, page, folder / name)
    return [folder / name for name in pages]


def _wait_for_graphql(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {process.returncode}; see {log}")
        try:
            if ask(url, QUERY, **VARIABLES)["assetNodes"]:
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
    parser.add_argument("--triage", action="store_true", help="launch the scan and the retrain, report the UI")
    parser.add_argument("--pictures", type=Path, help="with --triage, save the triage pages here")
    args = parser.parse_args()
    with dagster_dev(args.recall_home.resolve(), free_port()) as url:
        if args.triage:
            found = triage(url)
            print(json.dumps(found, indent=2))
            for saved in pictures(url, found, args.pictures) if args.pictures else []:
                print(f"saved {saved}", file=sys.stderr)
        else:
            print(json.dumps(summary(ask(url, QUERY, **VARIABLES)), indent=2))
        if args.screenshot:
            screenshot(url, args.screenshot, args.asset, args.depth)
            print(f"asset graph saved to {args.screenshot}")


if __name__ == "__main__":
    main()
