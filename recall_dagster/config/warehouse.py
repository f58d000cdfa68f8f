"""The ``warehouse:`` section of ``recall.yaml``: which dbt project's profile reaches the team's tables.

Read by the row counter and the impact query (:mod:`recall_dagster.warehouse` opens the connection it
names).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from recall_dagster.config.fields import Section, Text


class Warehouse(Section):
    """The ``warehouse:`` section: which dbt project's profile reaches the team's tables."""

    dbt_project: Text | None = Field(
        description="The dbt project folder (`recall init --dbt-project` writes it); null: DBT_PROJECT_DIR or none.")
    profiles_dir: Text | None = Field(
        description="Where profiles.yml is; null: DBT_PROFILES_DIR, the project, ~/.dbt, as dbt looks.")
    target: Text | None = Field(description="The profile's output; null: DBT_TARGET, then the profile's own target.")
    read_timeout_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        description="Each row count and training-query replay (on a connection that can only read) is stopped "
                    "after this long.")


# no dbt project named: DBT_PROJECT_DIR, as dbt reads it, or no warehouse
NO_WAREHOUSE = Warehouse(dbt_project=None, profiles_dir=None, target=None, read_timeout_seconds=300.0)
