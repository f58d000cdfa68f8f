"""Recall for Dagster: reads DataHub's metadata graph backwards from every model."""
