from pathlib import Path

from dagster_dbt import DbtProject

jaffle_project = DbtProject(
    project_dir=Path(__file__).joinpath("..", "..", "jaffle").resolve(),
)
jaffle_project.prepare_if_dev()
