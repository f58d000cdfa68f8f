"""The demo estate's Dagster code location, built on Recall's public API."""
