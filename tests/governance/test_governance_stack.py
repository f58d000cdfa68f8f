"""``recall evidence`` after break and heal: the incident with its postmortem, and the contaminated version."""

from __future__ import annotations

import json
from contextlib import closing
from typing import Iterator

import pytest
from click.testing import CliRunner
from datahub.metadata.schema_classes import DocumentInfoClass

from recall_dagster.cli import cli
from recall_dagster.graph import open_graph
from recall_dagster.progress import Progress
from recall_dagster.settings import Settings
from seed import lifecycle
from tests.conftest import built_estate, point_recall_at

pytestmark = [pytest.mark.stack, pytest.mark.slow]


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with built_estate(tmp_path_factory.mktemp("governance")) as settings:
        yield settings


def run(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_the_pack_lists_the_incident_its_postmortem_and_the_contaminated_version(
    estate: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_recall_at(estate, monkeypatch)
    lifecycle.break_estate(estate, Progress(quiet=True))
    assert run("incidents", "sync")["raised"], "the bad load raises an incident"
    lifecycle.heal(estate, Progress(quiet=True))
    assert run("incidents", "sync")["resolved"], "and the heal resolves it with a postmortem"

    pack = run("evidence", "--model", "fraud_detector")
    [incident] = pack["incidents"]
    assert incident["state"] == "RESOLVED" and incident["postmortem"]["document"].startswith("urn:li:document:")
    assert any("not_null" in test for test in incident["tests"])
    verdicts = {v["name"]: {x["status"] for x in v["verdicts"]} for v in pack["versions"]}
    assert "CONTAMINATED" in verdicts["fraud_detector_2"], verdicts
    assert {"data_sources", "quality_checks", "personal_data", "known_gaps", "owners"} <= set(pack)
    assert any(c["name"].startswith("not_null") for c in pack["quality_checks"])
    assert pack["personal_data"]["columns"] == [], "heal took the PII classification back off"
    with closing(open_graph(estate, read_only=True)) as graph:
        docs = graph.get_aspects(graph.list_urns("document"), [DocumentInfoClass])
    titles = [d[DocumentInfoClass.ASPECT_NAME].title for d in docs.values() if DocumentInfoClass.ASPECT_NAME in d]
    assert "Data governance evidence: fraud_detector" in titles
