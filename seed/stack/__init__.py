"""The demo's embedded systems of record: a Postgres warehouse from pgserver and the dbt runner."""
