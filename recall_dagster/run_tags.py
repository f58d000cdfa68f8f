"""Tags other tools write on MLflow runs that Recall reads: one name, known to the registry reader below the
graph and to the verdicts above it."""

# dagster-mlflow's resource tags every MLflow run a Dagster run opens with that Dagster run's id.
DAGSTER_RUN_TAG = "dagster_run_id"
