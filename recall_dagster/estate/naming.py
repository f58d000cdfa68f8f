"""What a person means by a model's name: read once, here, for every command.

A registered model is named as the registry names it (``fraud_detector``) or
by its group URN; one version as ``name/version`` (``fraud_detector/3``) or by
its URN. Every command (scan, gate, ack, evidence, impact, diagnose, the MCP
tools, the Dagster gate) reads the text through :func:`model_name`, so ``/``
and URN prefixes are interpreted in one place; the graph then answers which
versions those are, and no URN is ever built from a name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, TypeVar

from recall_dagster.errors import ConfigError
from recall_dagster.estate.closure import Closure
from recall_dagster.estate.names import display_name

C = TypeVar("C", bound=Closure)

MODEL_URN = "urn:li:mlModel:"
GROUP_URN = "urn:li:mlModelGroup:"


@dataclass(frozen=True)
class ModelName:
    text: str  # as given
    version_urn: str | None = None
    group_urn: str | None = None
    name: str | None = None  # the registered name, when the text says it
    version: str | None = None  # with ``name``: one version

    @property
    def one_version(self) -> bool:
        """True when the text names one version (its URN, or ``name/version``), not a registered model."""
        return self.version_urn is not None or self.version is not None

    @property
    def registered(self) -> str | None:
        """The registry's name for the model, when the text alone says it (not for a version's URN)."""
        if self.group_urn is not None:
            return display_name(self.group_urn)
        return self.name

    def names_model(self, closure: Closure) -> bool:
        """True when this names ``closure``'s registered model (any of its versions) or the version itself."""
        if self.text.strip() in (closure.registered_name.strip(), closure.model.name.strip()):
            return True  # its whole name, spaces around it aside: a name written in the graph may hold a "/"
        if self.one_version:
            return self.names_version(closure)
        return self.group_urn is not None and closure.registered_model == self.group_urn

    def names_version(self, closure: Closure) -> bool:
        """True when this names exactly ``closure``'s version."""
        if self.version_urn is not None:
            return closure.urn == self.version_urn
        return (self.version is not None and closure.registered_name == self.name
                and (closure.model.version or "").strip() == self.version)

    def among(self, closures: Iterable[C], exact: bool = False) -> list[C]:
        """The closures this names (with ``exact``, only as one version); a name two registered models answer
        to (``churn`` on MLflow and on SageMaker) is refused with both URNs, never the two read as one."""
        test = self.names_version if exact else self.names_model
        named = [c for c in closures if test(c)]
        groups = sorted({c.registered_model for c in named})
        if len(groups) > 1:
            raise ConfigError(f"{self.text!r} names several registered models ({', '.join(groups)}): "
                              "give the one you mean by its URN")
        return named


def model_name(text: str) -> ModelName:
    """``text`` read as a registered model, a version, or either URN."""
    given = text.strip()
    if given.startswith(MODEL_URN):
        return ModelName(text, version_urn=given)
    if given.startswith(GROUP_URN):
        return ModelName(text, group_urn=given)
    name, slash, version = given.rpartition("/")
    if slash and name and version:
        return ModelName(text, name=name, version=version)
    return ModelName(text, name=given)
