"""The embedded systems of record: Postgres warehouse and the dbt runner."""
