"""The rollback's decision on plain values: which aliases move where, what is refused, and the record's round trip
through registry tags."""

from __future__ import annotations

import pytest

from recall_dagster.errors import ConfigError
from recall_dagster.lifecycle.rollback import RollbackPlan, RollbackRecord, RollbackRequest, plan_rollback
from recall_dagster.lifecycle.verdict import Status, Verdict, VersionVerdict

PRODUCTION = frozenset({"production", "champion"})


def version(number: str, status: Status, reason: str = "judged") -> VersionVerdict:
    return VersionVerdict(model=f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_{number},PROD)",
                          name=f"fraud_{number}", version=number, verdict=Verdict(status, reason), spans=())


STANDING = {"1": version("1", Status.CLEAN), "2": version("2", Status.CLEAN), "3": version("3", Status.CONTAMINATED)}


def plan(to: str, aliases: dict[str, str], force: bool = False, reason: str = "", **standing: VersionVerdict
         ) -> RollbackPlan:
    return plan_rollback(RollbackRequest("fraud", to, reason, "ana", force), {"1", "2", "3"}, aliases, PRODUCTION,
                         {**STANDING, **standing})


def test_every_production_alias_moves_and_others_stay() -> None:
    made = plan("2", {"production": "3", "CHAMPION": "3", "staging": "3"})
    assert [(m.alias, m.from_version) for m in made.moves] == [("CHAMPION", "3"), ("production", "3")]
    assert set(made.withdrawn) == {"3"} and not made.forced and made.safe is not None and made.safe.version == "2"
    assert made.reason == "the blind window clears version 2 (fraud_2): CLEAN, judged"


def test_an_alias_already_on_the_target_is_no_move() -> None:
    made = plan("2", {"production": "2"})
    assert made.done and made.kept == ("production",) and made.lines()[0].startswith("production already on fraud")


def test_an_older_clean_version_than_the_blind_window_s_choice_is_allowed_and_said() -> None:
    made = plan("1", {"production": "3"})
    assert "the blind window's own choice is version 2 (fraud_2)" in made.lines()


@pytest.mark.parametrize(("to", "aliases", "said"), [
    ("4", {"production": "3"}, "the registry holds no version '4' of fraud; its versions: 1, 2, 3"),
    ("2", {"staging": "3"}, "no version of fraud carries a production alias (champion, production)"),
    ("3", {"production": "2"}, "will not roll fraud back to version 3 (fraud_3): CONTAMINATED, judged"),
])
def test_refusals(to: str, aliases: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=said.replace("(", r"\(").replace(")", r"\)")):
        plan(to, aliases)


def test_a_version_the_graph_does_not_hold_or_cannot_clear_needs_force_and_a_reason() -> None:
    unknown = version("2", Status.UNKNOWN, "no training run is recorded for this version")
    with pytest.raises(ConfigError, match="UNKNOWN, no training run"):
        plan("2", {"production": "3"}, **{"2": unknown})
    with pytest.raises(ConfigError, match="not in the metadata graph"):
        plan_rollback(RollbackRequest("fraud", "2", "", "ana"), {"1", "2", "3"}, {"production": "3"}, PRODUCTION, {})
    with pytest.raises(ConfigError, match=r"says why \(--reason\)"):
        plan("3", {"production": "2"}, force=True)
    forced = plan("3", {"production": "2"}, force=True, reason="v2 misses the new ring")
    assert forced.forced and forced.reason == "v2 misses the new ring"


def test_a_version_is_named_by_its_registered_model_only() -> None:
    with pytest.raises(ConfigError, match="names one version"):
        plan_rollback(RollbackRequest("fraud/2", "1", "", "ana"), {"1"}, {"production": "1"}, PRODUCTION, STANDING)
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud,PROD)"
    assert RollbackRequest(group, "1", "", "ana").registered == "fraud"


def test_the_record_comes_back_from_the_tags_it_leaves() -> None:
    record = RollbackRecord.of(plan("2", {"production": "3", "champion": "3"}, reason="bad load"), "2026-01-01T00:00:00+00:00",
                               "run-1")
    assert RollbackRecord.from_tags("fraud", "2", record.version_tags()) == record
    assert RollbackRecord.from_tags("fraud", "2", {"owner": "ana"}) is None
    assert record.markdown() == RollbackRecord.from_tags("fraud", "2", record.version_tags()).markdown(), (
        "the DataHub document is rebuilt from the tags alone, so a re-run writes the same text")
