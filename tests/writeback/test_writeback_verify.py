"""``recall verify``: every write path raised and stood down on scratch entities, real ones untouched."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from wb_support import MODEL, scan

from recall_dagster.cli import cli
from recall_dagster.graph import LiteGraph
from recall_dagster.writeback.run import write_back
from recall_dagster.writeback.state import read_state
from recall_dagster.writeback.store import WritebackStore
from recall_dagster.writeback.verify import verify
from tests.contracts.conform import conforms


@pytest.fixture
def home(settings, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RECALL_HOME", str(settings.home))
    monkeypatch.delenv("RECALL_GRAPH", raising=False)
    monkeypatch.delenv("RECALL_CONFIG", raising=False)
    return settings.home


def test_verify_on_lite_checks_every_path_and_leaves_real_entities_alone(
    lite_path, recall_config, settings, wb_config, home
) -> None:
    with closing(LiteGraph(lite_path)) as graph:
        assert write_back(graph, scan(graph, recall_config), settings, wb_config, 1_000).ok
        before = read_state(graph, [MODEL], ["urn:li:tag:recall:critical"])

    result = CliRunner().invoke(cli, ["verify", "--graph", str(lite_path), "--json"], catch_exceptions=False)

    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    conforms("verify", body)
    paths = ("property", "tag", "assertion", "incident", "document")
    assert {(c["phase"], c["path"]) for c in body["checks"] if c["ok"]} == {
        (phase, path) for phase in ("raise", "stand down") for path in paths
    }
    assert body["capabilities"] == {"incident_on_mlModel": True, "documents": True, "structured_properties": True}
    assert len(body["removed"]) == 4 and [u.split(":")[2] for u in body["left"]] == ["incident"]
    with closing(LiteGraph(lite_path)) as graph:
        after = read_state(graph, [MODEL], ["urn:li:tag:recall:critical"])
        assert after.assertions == before.assertions and after.documents == before.documents  # scratch ones removed
        assert after.tagged_models == before.tagged_models == (MODEL,)
        real = [u for u in after.incidents if u in before.incidents]
        assert real == list(before.incidents)
        assert all(after.aspects[u] == before.aspects[u] for u in real)  # verify stood nothing real down


def test_verify_reports_what_an_older_gms_refuses(fake, gms, recall_config, settings, wb_config) -> None:
    fake.refuse_model_incidents = True
    fake.refuse_documents = True

    result = verify(gms, settings, recall_config, wb_config, 1_000)

    assert result.capabilities == {"incident_on_mlModel": False, "documents": False, "structured_properties": True}
    failed = {(c.phase, c.path) for c in result.checks if not c.ok}
    assert failed == {("raise", "document"), ("stand down", "document")}  # incidents went to the dataset instead
    assert WritebackStore(settings.state_dir, gms.location).capability("incident_on_mlModel") is False
    assert not result.ok
    removed = {u for u, aspects in fake.aspects.items() if aspects.get("status", {}).get("removed")}
    assert removed == set(result.removed) and len(removed) == 3  # model, dataset, assertion


def test_verify_never_creates_a_graph_at_a_mistyped_path(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    result = CliRunner().invoke(cli, ["verify", "--graph", str(missing)])
    assert result.exit_code == 3 and "no metadata graph at" in result.output
    assert not missing.exists()
