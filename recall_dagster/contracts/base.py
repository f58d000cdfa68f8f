"""What every contract shares: open to additions, closed to nothing a consumer relies on."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SchemaVersion = Literal[1]  # every contract's schema_version today; a contract that renames a field moves on alone
VERSION: SchemaVersion = 1

Instant = str  # ISO-8601 UTC, seconds precision
Json = dict[str, Any]


class Part(BaseModel):
    """A nested object of a contract.

    Recall builds its answers from these models, and a model refuses a field it does not name: an answer that
    would carry one fails where it is built, not in a consumer. The published schema admits such fields all the
    same (``additionalProperties``), because that is the promise to consumers: a field added at the same version
    is not a break for one built against the older schema."""

    # protected_namespaces: ``model_urn`` and its like are contract fields, not pydantic's (2.9 warns otherwise)
    model_config = ConfigDict(extra="forbid", json_schema_extra={"additionalProperties": True}, protected_namespaces=())

    def as_json(self) -> Json:
        """The part as its JSON names it: the fields it was built with, and only those, so an optional field
        the builder left out stays absent rather than appearing as null."""
        return self.model_dump(mode="json", exclude_unset=True)


class Contract(Part):
    """A whole answer: one command's ``--json``, one MCP tool's result."""

    schema_version: SchemaVersion


class UnlinkedAssertion(Part):
    """A failing assertion on data no model reads: every answer that could pass over it says it."""

    urn: str
    name: str
    dataset: str
    result: str | None
