"""Where the demo's Feast runs, and how work reaches it.

Feast (0.47 to 0.67 alike) holds pandas below 3, which the demo's training stack has moved past, so Feast runs
in the environment DataHub's sources run in: its feast source brings Feast, and ``make install`` makes it beside
the demo's own (``.venv/ingest/acryl-datahub-<version>``, :mod:`recall_dagster.ingest_env`). Everything the
feature store does with Feast (apply, materialise, read online, point-in-time joins) is one job for
:mod:`ml_models.feast_worker`, run there as a script: data crosses as the parquet files Feast reads anyway, and
the answer as JSON. What the checkout computes (the exports, the entity rows, the comparisons) stays here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from recall_dagster import ingest_env
from recall_dagster.errors import StackError

WORKER = Path(__file__).with_name("feast_worker.py")


def feast_environment() -> ingest_env.IngestEnv:
    """The ingestion environment beside the one this runs in, at the acryl-datahub Recall reads with."""
    return ingest_env.IngestEnv(Path(sys.prefix) / "ingest", version(ingest_env.DISTRIBUTION))


def run_feast(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in Feast's environment (made, or given Feast, first if it has none); its answer. Feast's own
    output goes to this process's stderr, where the demo keeps libraries' chatter."""
    env = feast_environment()
    if "feast" not in env.installed()[0] or not env.python.exists():
        ingest_env.prepare(env, ["feast"], [], lambda line: print(f"feast: {line}", file=sys.stderr))
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="feast-job-", encoding="utf-8") as held:
        json.dump(job, held)
        held.flush()
        done = subprocess.run([str(env.python), str(WORKER), held.name], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, check=False)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-12:])
        raise StackError(f"Feast (in {env.path}) failed on the repository {job['repo']}:\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])
