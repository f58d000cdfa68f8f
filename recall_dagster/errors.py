"""One error hierarchy whose messages are written for the person at the terminal.

Every error carries the CLI exit code it maps to, so the CLI and the Dagster
wiring never need to guess how serious a failure is.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_UNVERIFIED = 4


def reason(err: BaseException) -> str:
    """``Type: first line`` of an error a library raised: enough to act on, no traceback."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else 'failed'}"


class RecallError(Exception):
    """A failure a user can act on; ``str(err)`` is the whole message."""

    exit_code: int = EXIT_USAGE


class ConfigError(RecallError):
    """Malformed configuration, environment or arguments."""

    exit_code = EXIT_USAGE


class ModelNotFound(ConfigError):
    """No model or version in the graph answers to the name asked for."""


class NoProductionVersion(ModelNotFound):
    """The registered model is there, but nothing marks any of its versions production: unverified, not absent."""

    exit_code = EXIT_UNVERIFIED


class GraphError(RecallError):
    """The metadata graph exists but cannot be read or written as asked."""

    exit_code = EXIT_USAGE


class ServiceUnreachable(RecallError):
    """A service the command needs (GMS, Postgres, MLflow) did not answer."""

    exit_code = EXIT_UNREACHABLE


class StackError(RecallError):
    """An embedded service (Postgres, dbt, MLflow, ingestion) failed to do its job."""

    exit_code = EXIT_USAGE
