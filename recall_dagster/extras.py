"""Which optional extra brings which module, so a command that needs one says how to install it.

Recall's core installs into a team's environment without touching its stack (docs/install.md); what only some
commands need is an extra. A command reaching a module its extra brings, where that extra is not installed,
ends with the install line rather than an ImportError's traceback.
"""

from __future__ import annotations

from recall_dagster.errors import ConfigError

# Top-level module -> (the extra that installs it, what Recall needs it for).
EXTRAS: dict[str, tuple[str, str]] = {
    "mcp": ("mcp", "`recall mcp` serves the Model Context Protocol"),
    "sklearn": ("impact", "an impact replay loads a scikit-learn model"),
    "pyarrow": ("impact", "an impact replay reads held-out rows from parquet"),
    "psycopg2": ("postgres", "row counts and replays read a Postgres warehouse"),
    "duckdb_engine": ("duckdb", "row counts and replays read a DuckDB warehouse"),
}


def missing_extra(err: ModuleNotFoundError) -> ConfigError | None:
    """The error to show for a module an extra brings, or None for any other missing module (a bug to surface)."""
    top = (err.name or "").partition(".")[0]
    if top not in EXTRAS:
        return None
    extra, why = EXTRAS[top]
    return ConfigError(f"{why}, and `{top}` is not installed: pip install 'recall-dagster[{extra}]'")
