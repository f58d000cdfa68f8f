"""A diagnosis on record: evidence before the graph, one document however often it is diagnosed, channels told
only when the verdict or ranking changes."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

from datahub.metadata.schema_classes import DocumentInfoClass

from recall_dagster.diagnose.collect import Pair
from recall_dagster.config.load import load
from recall_dagster.diagnose.facts import Clue, Facts, RunFacts
from recall_dagster.diagnose.metric_gate import metric_gate
from recall_dagster.diagnose.hypotheses import rank
from recall_dagster.diagnose.publish import document_urn, record_diagnosis
from recall_dagster.diagnose.service import Diagnosis
from recall_dagster.graph import LiteGraph
from recall_dagster.writeback.config import RetryPolicy, SlackConfig
from tests.conftest import Inbox

MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_2,PROD)"


def diagnosis(transform: bool) -> Diagnosis:
    config = load().diagnose
    base = RunFacts("1", "r1", 1_000, 2_000, {"roc_auc": 0.95}, features=("a", "b"))
    cand = RunFacts("2", "r2", 5_000, 6_000, {"roc_auc": 0.90}, features=("a", "b"))
    clues = (Clue("transform_changed", "a", "the code computing a changed", "feature", fields=("a",)),) if transform else ()
    facts = Facts("fraud_detector", cand, base, clues, 2)
    gate = metric_gate(cand.metrics, base.metrics, config)
    ranked = rank(facts, gate.loss, config.hypotheses)
    return Diagnosis(Pair("fraud_detector", "2", "1"), gate, "REGRESSION", f"{ranked[0].kind} explains it", ranked,
                     (), facts)


def test_evidence_first_one_document_and_news_only_once(tmp_path: Path, inbox: Inbox) -> None:
    shipped = load().writeback
    slack = SlackConfig(enabled=True, webhook_url_env="TEST_SLACK_URL")
    config = shipped.model_copy(update={
        "notify": shipped.notify.model_copy(update={"slack": slack}),
        "retry": RetryPolicy(attempts=1, backoff_seconds=0, max_backoff_seconds=0, budget_seconds=3600)})
    evidence = tmp_path / "evidence"
    with closing(LiteGraph(tmp_path / "graph.db")) as graph:
        first = record_diagnosis(graph, evidence, diagnosis(True), [MODEL], config, 1_000)
        again = record_diagnosis(graph, evidence, diagnosis(True), [MODEL], config, 2_000)
        changed = record_diagnosis(graph, evidence, diagnosis(False), [MODEL], config, 3_000)
        doc = graph.get_aspects([document_urn(diagnosis(True))], [DocumentInfoClass])
    assert (first.writes, again.writes) == (1, 0), "the same diagnosis again rewrites nothing"
    assert changed.writes == 1, "a different ranking is a new text"
    body = json.loads((evidence / "diagnose" / "fraud_detector-v2-vs-v1.json").read_text())
    assert body["hypotheses"][0]["kind"] == "no_data_cause" and body["schema_version"] == 1
    info = doc[document_urn(diagnosis(True))][DocumentInfoClass.ASPECT_NAME]
    assert [a.asset for a in info.relatedAssets] == [MODEL] and "# Diagnosis: fraud_detector" in info.contents.text
    posts = [body for method, path, body in inbox.take() if path == "/slack"]
    assert len(posts) == 2, "told when the diagnosis first appears and when its ranking changes, not in between"
    assert "feature_transformation" in posts[0]["text"] and "no_data_cause" in posts[1]["text"]


def test_without_a_graph_the_evidence_is_still_written(tmp_path: Path) -> None:
    record = record_diagnosis(None, tmp_path, diagnosis(True), [], load().writeback, 1_000)
    assert [p.name for p in record.evidence] == ["fraud_detector-v2-vs-v1.json", "fraud_detector-v2-vs-v1.md"]
    assert "**feature_transformation**" in record.evidence[1].read_text()
