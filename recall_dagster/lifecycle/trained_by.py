"""Which Dagster run trained a model version, and the page a person opens to see it.

A version trained inside Dagster through dagster-mlflow carries its Dagster
run's id (the MLflow run's ``dagster_run_id`` tag, which the registry overlay
adds to the version's properties), so a contaminated version leads straight to
the run that fit it: its logs, its inputs' materializations, who launched it.
The link needs the team's webserver address (``dagster.webserver_url``); without
one the id alone is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.narrate import run_label
from recall_dagster.run_tags import DAGSTER_RUN_TAG


@dataclass(frozen=True)
class DagsterRun:
    run_id: str
    url: str | None  # the run's page in the Dagster UI

    @classmethod
    def of(cls, properties: Mapping[str, str], webserver_url: str) -> "DagsterRun | None":
        """The run a version's properties name, linked under ``webserver_url`` when there is one."""
        run_id = (properties.get(DAGSTER_RUN_TAG) or "").strip()
        if not run_id:
            return None
        base = webserver_url.strip().rstrip("/")
        return cls(run_id, f"{base}/runs/{run_id}" if base and run_id.replace("-", "").isalnum() else None)

    @property
    def label(self) -> str:
        return run_label(self.contract().as_json())

    def contract(self) -> contracts.DagsterRun:
        return contracts.DagsterRun(run_id=self.run_id, url=self.url)
