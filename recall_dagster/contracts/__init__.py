"""Recall's answers as versioned contracts: what every ``--json`` output and MCP tool returns.

Each command's output is described by a pydantic model carrying ``schema_version``, and is produced from it:
the values a command answers with build their contract's parts, so a field the contract does not name, or names
otherwise, is a type error rather than a silent change, and the models refuse one at run time too. The JSON
Schemas in the repository's ``schemas/`` are exported from these models (``python -m recall_dagster.contracts
schemas``, by :mod:`.export`) and the tests validate every command's real output against them. A field may be
added at the same version (the schemas admit properties they do not name, so a consumer built against an older
schema keeps working); a rename or removal bumps the version.

This package's own ``__init__`` imports nothing, so the pure core builds contract parts without the export's
files.
"""
