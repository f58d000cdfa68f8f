"""Adoption by a team that runs dbt by hand, from ``recall init`` with no flags in its repository's root
(docs/estate.md's first walkthrough, every line run as written; ``recall init`` must print its order).

Healthy: the scan names the production model and the gate lets the retrain go. Broken, the nightly running the
models then the tests (NULL amounts in the raw orders reach a ``count(*)`` aggregate between them and the training
input): the scan is CRITICAL, the gate NO-GO, Dagster refuses the retrain, the incident names the model, a retrain
forced past the gate is the contaminated version the blind window names, and ``recall impact`` reaches the model.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.adoption.team import BY_HAND, Team, bad_load, estate, walkthrough

pytestmark = [pytest.mark.stack, pytest.mark.slow]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    """The team that runs dbt by hand, as the first walkthrough does."""
    yield from estate(tmp_path_factory, BY_HAND)


def test_init_prints_the_order_the_readme_walks(team: Team) -> None:
    said = team.must(f"recall init --dir {team.root / 'elsewhere'}", cwd=team.repo)
    printed = [line.split("  #")[0].strip() for line in said.split("Then, in this order:", 1)[1].splitlines()
               if line.strip() and not line.strip().startswith("(")]
    target = f"{team.dbt.resolve() / 'target'}/"
    dbt_steps = [c.replace(target, "target/") for c in printed if c.startswith(("dbt ", "cp "))]
    readme = walkthrough()
    assert f"cd jaffle && {' && '.join(dbt_steps)} && cd .." in readme, (dbt_steps, readme)
    ingests = [c.rsplit("/", 1)[1] for c in printed if c.startswith("recall ingest")]
    assert ingests == [line.split("#")[0].strip().rsplit("/", 1)[1] for line in readme
                       if line.startswith("recall ingest")]


def test_a_healthy_stock_estate_names_its_production_model_and_lets_the_retrain_go(team: Team) -> None:
    code, scan = team.recall("scan")
    assert code == 0, scan
    assert [(m["name"], m["production"]) for m in scan["models"]] == [("order_forecaster_1", True)], (
        "the alias, from the registry: never 'no models'")
    assert scan["coverage"]["models"]["with_training_inputs"] == 1 and scan["coverage"]["unresolved_training_inputs"] == {}
    assert scan["coverage"]["datasets"]["with_freshness"] == scan["coverage"]["datasets"]["total"], (
        "dbt's builds and source freshness say when each table changed")
    code, gate = team.recall("gate", "order_forecaster")
    assert gate["verdict"] in ("GO", "UNVERIFIED") and code in (0, 4), gate
    assert gate["verdict"] == "GO" or gate["unverified_checks"], "UNVERIFIED names exactly what is missing"
    rows = next(c for c in gate["checks"] if c["name"] == "row_count_drop")
    assert rows["status"] == "PASS", f"counted now through the dbt profile init named, nothing else set: {rows}"


def test_a_bad_load_reaches_the_model_through_its_aggregate_in_every_answer(team: Team) -> None:
    bad_load(team)
    # The bad rows reach the aggregate: the team's nightly runs the models, then the tests (``dbt build`` would
    # skip everything below the first failing test and keep the last good tables), and nothing else: no copy,
    # no docs generate. The recipe init wrote reads what that leaves.
    team.must("dbt seed && dbt run", cwd=team.dbt)
    assert team.sh("dbt test", cwd=team.dbt).returncode == 1, "the not_null tests on amount fail"
    for recipe in ("dbt", "mlflow"):
        done = team.sh(f"recall ingest {team.repo / 'recipes' / f'{recipe}.yml'}")
        assert done.returncode == 0, done.stderr[-3000:]
        assert "recall ingest: installing" not in done.stderr, "the walkthrough's ingestion environment is reused"

    code, scan = team.recall("scan")
    [model] = scan["models"]
    assert code == 1 and model["tier"] == "CRITICAL", model
    assert "failing_assertion" in {f["detector"] for f in model["findings"]}
    code, gate = team.recall("gate", "order_forecaster")
    assert code == 1 and gate["verdict"] == "NO-GO", gate

    before = team.versions()
    refused = team.materialize("forecast")
    assert "FAILURE" in refused.stdout and "Recall's retrain gate refuses to retrain order_forecaster" in refused.stderr
    assert team.versions() == before, "Dagster refused the retrain: no version was registered"

    code, synced = team.recall("incidents", "sync")
    assert any(m["name"] == "order_forecaster_1" for i in synced["raised"] for m in i["models"]), synced

    code, impact = team.recall("impact", "stg_orders", "--column", "amount", "--mutation", "drop", "--no-write")
    assert impact["affected_models"] == 1, impact

    forced = team.materialize("forecast", {"recall/gate_override_by": "ana@jaffle.example",
                                           "recall/gate_override_reason": "the forecast must ship today"})
    assert "SUCCESS" in forced.stdout, forced.stderr[-3000:]
    team.must(f"recall ingest {team.repo / 'recipes' / 'mlflow.yml'}")
    code, window = team.recall("blind-window")
    versions = {v["name"]: v for c in window["causes"] for m in c["models"] for v in m["versions"]}
    assert versions["order_forecaster_2"]["verdict"] == "CONTAMINATED", versions
    assert versions["order_forecaster_2"]["gate_override"]["by"] == "ana@jaffle.example"
    assert versions["order_forecaster_1"]["verdict"] == "CLEAN", "trained before the bad load: the rollback"
    assert any(m["rollback"] and m["rollback"]["name"] == "order_forecaster_1"
               for c in window["causes"] for m in c["models"]), window
