"""What a section of ``recall.yaml`` is made of, for the domains that read their sections as written.

A domain whose settings are one section of the file reads that section itself,
declared in the domain's own config module from these parts; the file's model
(:mod:`recall_dagster.config.models`) puts the sections together. So a key is
declared once, with its range and its description, where it is used.
Values are strict: YAML's ``"10"`` is not a number, ``yes`` is not a count,
NaN and infinities are refused.

A validator that finds a mistake in one key of its section raises :class:`KeyMistake`
naming that key, so the message points at ``scoring.fail_tier``, not at ``scoring``.
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import Annotated, Any, Mapping, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from recall_dagster.severity import Severity


class KeyMistake(ValueError):
    """A rule between values broken at ``key`` (a dotted path below the section that checks it)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key, self.message = key, message


class Section(BaseModel):
    """A mapping of the file: unknown keys are typos, values are taken as written.

    What a section derives from its keys is a cached property; a copy forgets it, since pydantic's copy
    carries it over and a copy with other keys would answer from the old ones."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        for name in _derived(type(self)):
            copied.__dict__.pop(name, None)
        return copied


@cache
def _derived(section: type) -> tuple[str, ...]:
    return tuple(name for klass in section.__mro__ for name, value in vars(klass).items()
                 if isinstance(value, cached_property))


def _none_is_empty(value: Any) -> Any:
    return [] if value is None else value


def none_is_empty_mapping(value: Any) -> Any:
    """An empty mapping for a key written with no value (``windows:``)."""
    return {} if value is None else value


def _severity(value: Any) -> Any:
    """A severity as written, in any case; YAML has no enums, so the text is the value."""
    if isinstance(value, str) and value.upper() in Severity.__members__:
        return Severity[value.upper()]
    if isinstance(value, Severity):
        return value
    raise ValueError(f"must be one of {', '.join(s.value for s in Severity)}")


def folded(values: list[str]) -> frozenset[str]:
    """``values`` as a section matches them, in any case (tag and term names)."""
    return frozenset(v.casefold() for v in values)


def _web_address(value: str) -> str:
    if value and not value.startswith(("http://", "https://")):
        raise ValueError("an http:// or https:// address, or empty")
    return value


Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
WebAddress = Annotated[str, StringConstraints(strip_whitespace=True), AfterValidator(_web_address)]
Texts = Annotated[list[Text], BeforeValidator(_none_is_empty)]
Number = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[int, Field(ge=1)]
Level = Annotated[Severity, BeforeValidator(_severity)]
