"""The ``dagster:`` section of ``recall.yaml``: what the ``recall`` code location schedules and watches."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from recall_dagster.config.fields import Positive, Section, Text, Texts, WebAddress


class DagsterConfig(Section):
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
