"""Moving a model's production alias back to a version the blind window clears: the decision, without I/O.

A rollback is a person's act on the registry. Recall decides what that act is
(which production aliases move, from which versions, to which) and refuses one
that could make things worse: a version the registry does not hold, or one the
blind window convicts or cannot clear, unless the person forces it. An alias
already on the target moves nothing, so a rollback run twice changes nothing
the second time. Who and why travel with the target version as registry tags
(:class:`RollbackRecord`), and every later record of the act (the DataHub
document, a re-run's repair of it) is rebuilt from those tags, so it says what
was decided then, not what is known now.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import AbstractSet, Collection, Mapping, Sequence

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.errors import ConfigError
from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.naming import model_name
from recall_dagster.estate.production import registry_marks_production
from recall_dagster.lifecycle.assess import ModelVersions, RootCause
from recall_dagster.lifecycle.verdict import Status, Verdict, VersionVerdict, newest_first, rollback_target, worst

TAG = "recall.rollback."
BY, REASON, MOVES, AT, JUDGED, FORCED, RUN = (f"{TAG}{k}" for k in ("by", "reason", "moves", "at", "judged", "forced",
                                                                    "dagster_run"))
WITHDRAWN = f"{TAG}withdrawn"  # on a version an alias left: where it went, by whom and why
UNREACHED = "no failing test's data reaches it"


@dataclass(frozen=True)
class RollbackRequest:
    model: str  # the registered model, as the registry names it (or its group URN)
    to_version: str
    reason: str
    by: str
    force: bool = False  # past a target the blind window convicts or cannot clear

    @property
    def registered(self) -> str:
        """The registry's name for the model; a version (``name/3``, a version URN) is refused: the version
        rolled back to is ``--to``'s to say."""
        named = model_name(self.model)
        if named.one_version or not named.registered:
            raise ConfigError(f"{self.model!r} names one version: give the registered model (its name or group URN) "
                              "and the version to roll back to with --to")
        return named.registered


def _versions_by_urn(causes: Sequence[RootCause]) -> dict[str, dict[str, list[VersionVerdict]]]:
    """group URN -> version URN -> its verdict in each root cause that reaches it."""
    found: dict[str, dict[str, list[VersionVerdict]]] = {}
    for cause in causes:
        for model in cause.models:
            for version in model.versions:
                found.setdefault(model.group, {}).setdefault(version.model, []).append(version)
    return found


def _combined(verdicts: Sequence[VersionVerdict]) -> VersionVerdict:
    """One version judged by every root cause at once: the worst verdict decides."""
    return replace(verdicts[0], verdict=worst([v.verdict for v in verdicts]))


def standings(model: str, closures: Sequence[ModelClosure], causes: Sequence[RootCause]) -> dict[str, VersionVerdict]:
    """Registry version -> what the blind window says of it, over every root cause; a version no failing
    test's data reaches is CLEAN, as :func:`~recall_dagster.lifecycle.verdict.judge` says of one reading nothing
    poisoned. Versions the graph does not hold are absent: nothing can be said of them."""
    judged = {urn: _combined(vs) for group in _versions_by_urn(causes).values() for urn, vs in group.items()}
    out: dict[str, VersionVerdict] = {}
    for closure in model_name(model).among(closures):
        version = (closure.model.version or "").strip()
        if not version:
            continue
        out[version] = judged.get(closure.urn) or VersionVerdict(
            model=closure.urn, name=closure.model.name, version=version, verdict=Verdict(Status.CLEAN, UNREACHED),
            spans=(), live_deployments=tuple(d.urn for d in closure.live_deployments),
        )
    return out


def combined(causes: Sequence[RootCause]) -> list[ModelVersions]:
    """Each affected model judged over every root cause at once (one cause alone may clear a version another
    convicts): its versions newest first, and its rollback target."""
    out = []
    for group, versions in _versions_by_urn(causes).items():
        ordered = newest_first([_combined(vs) for vs in versions.values()])
        out.append(ModelVersions(group, ordered, rollback_target(ordered)))
    return out


def advised(models: Sequence[ModelVersions]) -> dict[str, VersionVerdict]:
    """Registered model name -> the version to roll back to, for each of the :func:`combined` ``models`` whose
    newest version the blind window does not clear but an older one it does: what a person launching a
    rollback fills in."""
    return {m.name: m.rollback for m in models
            if m.rollback is not None and m.rollback is not m.versions[0] and m.rollback.version}


@dataclass(frozen=True)
class AliasMove:
    alias: str
    from_version: str

    def contract(self) -> contracts.AliasMove:
        return contracts.AliasMove(alias=self.alias, from_version=self.from_version)


def _described(version: str, standing: VersionVerdict | None) -> str:
    if standing is None:
        return f"version {version}: not in the metadata graph, so no blind window can clear it"
    return f"version {version} ({standing.name}): {standing.verdict.status.value}, {standing.verdict.reason}"


@dataclass(frozen=True)
class RollbackPlan:
    """What a rollback moves, and what the blind window says of where it lands."""

    model: str
    to_version: str
    moves: tuple[AliasMove, ...]  # the production aliases that leave their version for the target
    kept: tuple[str, ...]  # production aliases already on the target
    target: VersionVerdict | None  # None: the graph does not hold the target
    safe: VersionVerdict | None  # the blind window's own choice: the newest version it clears
    forced: bool  # the target is not cleared and the person said --force
    by: str
    reason: str
    withdrawn: Mapping[str, VersionVerdict | None]  # each version an alias leaves, as the blind window sees it

    @property
    def done(self) -> bool:
        """Every production alias is on the target already: nothing to move."""
        return not self.moves

    @property
    def judged(self) -> str:
        """The target as the blind window judges it, in one line: what the record keeps of why it was safe."""
        return _described(self.to_version, self.target)

    def lines(self) -> list[str]:
        """The plan as a person reads it before saying --apply."""
        if self.done:
            out = [f"{', '.join(self.kept)} already on {self.model} version {self.to_version}: nothing to move"]
        else:
            out = [f"move {m.alias} of {self.model} from version {m.from_version} to version {self.to_version}"
                   for m in self.moves]
        out.append(f"target {self.judged}")
        for version, standing in sorted(self.withdrawn.items()):
            out.append(f"leaving {_described(version, standing)}")
        if self.safe is not None and self.safe.version != self.to_version:
            out.append(f"the blind window's own choice is version {self.safe.version} ({self.safe.name})")
        if self.forced:
            out.append("forced past the blind window's verdict on the target")
        return out

    def contract(self) -> contracts.RollbackPlan:
        return contracts.RollbackPlan(
            model=self.model,
            to_version=self.to_version,
            moves=[m.contract() for m in self.moves],
            already=list(self.kept),
            done=self.done,
            target=self.target.contract() if self.target else None,
            safe_version=self.safe.version if self.safe else None,
            forced=self.forced,
            by=self.by,
            reason=self.reason,
            withdrawn={v: (s.contract() if s else None) for v, s in sorted(self.withdrawn.items())},
        )


def production_marks(aliases: Mapping[str, str], production_aliases: AbstractSet[str]) -> dict[str, str]:
    """The aliases (alias -> version) that mark a version production, by the estate's own rule."""
    return {a: str(v) for a, v in aliases.items() if registry_marks_production([a], (), production_aliases, set())}


def _refusal(request: RollbackRequest, target: VersionVerdict | None, safe: VersionVerdict | None) -> str | None:
    """Why rolling back to this target could make things worse, or None when the blind window clears it."""
    if target is not None and target.verdict.status is Status.CLEAN:
        return None
    instead = (f"the blind window's safe version is {safe.version} ({safe.name})" if safe is not None
               else "no version is provably clean")
    return (f"will not roll {request.registered} back to {_described(request.to_version, target)}; {instead}. "
            "--force rolls back to it anyway")


def plan_rollback(
    request: RollbackRequest,
    versions: Collection[str],
    aliases: Mapping[str, str],
    production_aliases: AbstractSet[str],
    standing: Mapping[str, VersionVerdict],
) -> RollbackPlan:
    """The rollback ``request`` asks for, against the registry's ``versions`` and ``aliases`` (alias ->
    version) of the model and the blind window's ``standing`` of each version (:func:`standings`).

    Every production alias the model carries moves to the target, so no marker of
    production is left on the version being withdrawn. A ConfigError (exit 2)
    when the version is not in the registry, when no production alias exists to
    move, or when the blind window does not clear the target and ``force`` is off.
    """
    name, to = request.registered, request.to_version.strip()
    if to not in versions:
        held = ", ".join(sorted(versions, key=lambda v: (len(v), v))) or "none"
        raise ConfigError(f"the registry holds no version {to!r} of {name}; its versions: {held}")
    marked = production_marks(aliases, production_aliases)
    if not marked:
        raise ConfigError(f"no version of {name} carries a production alias ({', '.join(sorted(production_aliases))}):"
                          " there is no production alias to move back")
    target = standing.get(to)
    safe = rollback_target(list(standing.values()))
    moves = tuple(AliasMove(a, v) for a, v in sorted(marked.items()) if v != to)
    refused = _refusal(request, target, safe) if moves else None
    if refused is not None and not request.force:
        raise ConfigError(refused)
    if refused is not None and not request.reason:
        raise ConfigError(f"a rollback forced past the blind window says why (--reason): {refused}")
    return RollbackPlan(
        model=name, to_version=to, moves=moves, kept=tuple(sorted(a for a, v in marked.items() if v == to)),
        target=target, safe=safe, forced=refused is not None, by=request.by,
        reason=request.reason or f"the blind window clears {_described(to, target)}",
        withdrawn={m.from_version: standing.get(m.from_version) for m in moves},
    )


@dataclass(frozen=True)
class RollbackRecord:
    """Who moved which aliases to a version, when and why: kept as the version's registry tags."""

    model: str
    to_version: str
    moves: tuple[AliasMove, ...]
    by: str
    reason: str
    at: str  # ISO-8601 instant
    judged: str
    forced: bool = False
    run: str = ""  # the Dagster run that did it, if one did

    @classmethod
    def of(cls, plan: RollbackPlan, at: str, run: str = "") -> "RollbackRecord":
        return cls(plan.model, plan.to_version, plan.moves, plan.by, plan.reason, at, plan.judged, plan.forced, run)

    @property
    def ident(self) -> str:
        """Names the record's evidence and its document: one rollback, one name."""
        return f"{self.model}-v{self.to_version}-{self.at}"

    def version_tags(self) -> dict[str, str]:
        tags = {
            BY: self.by, REASON: self.reason, AT: self.at, JUDGED: self.judged, FORCED: str(self.forced).lower(),
            MOVES: ",".join(f"{m.alias}:{m.from_version}" for m in self.moves),
        }
        return {**tags, RUN: self.run} if self.run else tags

    def withdrawn_tags(self) -> dict[str, str]:
        """What each version an alias left carries: where the alias went, by whom, when and why."""
        return {WITHDRAWN: f"{self.model} version {self.to_version} at {self.at} by {self.by}: {self.reason}"}

    @classmethod
    def from_tags(cls, model: str, version: str, tags: Mapping[str, str]) -> "RollbackRecord | None":
        """The last rollback to ``version``, from its registry tags; None when none was recorded there."""
        if not tags.get(BY) or not tags.get(MOVES):
            return None
        moves = tuple(AliasMove(*pair.split(":", 1)) for pair in tags[MOVES].split(",") if ":" in pair)
        return cls(model, version, moves, tags[BY], tags.get(REASON, ""), tags.get(AT, ""), tags.get(JUDGED, ""),
                   tags.get(FORCED) == "true", tags.get(RUN, ""))

    @property
    def title(self) -> str:
        aliases = ", ".join(m.alias for m in self.moves)
        return f"Rollback: {self.model} {aliases} to version {self.to_version}"

    def markdown(self) -> str:
        """The record as a person reads it in DataHub or the evidence folder: from the record alone, no clock."""
        lines = [f"# {self.title}", "", f"Rolled back by **{self.by}** at {self.at}: {self.reason}", ""]
        lines += [f"- {m.alias}: version {m.from_version} -> version {self.to_version}" for m in self.moves]
        lines.append(f"- The blind window on the target when it was chosen: {self.judged}")
        if self.forced:
            lines.append("- Forced past the blind window's verdict on the target")
        if self.run:
            lines.append(f"- Dagster run {self.run}")
        return "\n".join(lines) + "\n"

    def contract(self) -> contracts.RollbackRecord:
        """The record as ``recall rollback --json`` names it, and as its evidence file keeps it."""
        return contracts.RollbackRecord(
            model=self.model, to_version=self.to_version, by=self.by, reason=self.reason, at=self.at,
            moves=[m.contract() for m in self.moves],
            judged=self.judged, forced=self.forced, dagster_run=self.run or None,
        )
