"""Regression diagnosis: a metric gate between two model versions, ranked causes, a repair proven in a copy."""
