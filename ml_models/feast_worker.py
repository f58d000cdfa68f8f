"""Feast's side of the demo's feature store, run in the environment Feast lives in (``python feast_worker.py``).

Feast pins pandas below 3, so it cannot sit beside the demo's training stack: it runs in the ingestion
environment (DataHub's feast source brings it), and :mod:`ml_models.feast_env` hands it jobs. This file imports
nothing of the checkout, only Feast and what Feast itself needs, since that environment holds nothing else. What
it does is what :mod:`ml_models.feature_store` did with Feast in process: ``feast apply`` of the views described
(deleting the repository's others when asked), materialise windows into the online store, read rows back online,
and answer point-in-time joins from parquet entity frames into parquet.

It serves until its input closes, one job per line of input and one answer per line of output. The job:
``{"repo", "views": [{"name", "keys", "features": [{"name", "dtype", "description"}], "source",
"timestamp_field", "description", "owner"}], "delete_others", "materialize": [{"view", "start", "end"}],
"online": [{"features", "entity_rows"}], "historical": [{"features", "entity_df", "out"}], "list"}``, each part
optional but the repository; the answer: ``{"answer": {"removed": [...], "online": [{feature: [values]}],
"views": [...]}}``, or ``{"error": "the traceback's tail"}``. Anything else written, Feast's chatter included,
goes to stderr: the answers keep the output to themselves.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import traceback
from datetime import datetime, timedelta
from typing import Any


def apply(store: Any, job: dict) -> list[str]:
    """``feast apply`` of the job's entities and views; returns the views deleted."""
    from feast import Entity, FeatureView, Field, FileSource, ValueType
    from feast.types import Float64, String

    dtypes = {"Float64": Float64, "String": String}
    entities = {key: Entity(name=key, join_keys=[key], value_type=ValueType.STRING)
                for view in job["views"] for key in view["keys"]}
    views = [
        FeatureView(
            name=view["name"],
            entities=[entities[key] for key in view["keys"]],
            schema=[Field(name=f["name"], dtype=dtypes[f["dtype"]], tags={"description": f["description"]})
                    for f in view["features"]],
            source=FileSource(name=f"{view['name']}_export", path=view["source"],
                              timestamp_field=view["timestamp_field"]),
            ttl=timedelta(0),  # no expiry: the online store keeps the newest row of each entity
            online=True,
            description=view["description"],
            owner=view["owner"],
        )
        for view in job["views"]
    ]
    wanted = {view["name"] for view in job["views"]}
    stale = [v for v in store.list_feature_views() if v.name not in wanted] if job.get("delete_others") else []
    store.apply([*entities.values(), *views], objects_to_delete=stale, partial=False)
    return sorted(view.name for view in stale)


def run(job: dict) -> dict:
    from feast import FeatureStore
    import pandas as pd

    store = FeatureStore(repo_path=job["repo"])
    removed = apply(store, job) if "views" in job else []
    for window in job.get("materialize", ()):
        store.materialize(start_date=datetime.fromisoformat(window["start"]),
                          end_date=datetime.fromisoformat(window["end"]), feature_views=[window["view"]])
    online = [store.get_online_features(features=read["features"], entity_rows=read["entity_rows"]).to_dict()
              for read in job.get("online", ())]
    for ask in job.get("historical", ()):
        entity = pd.read_parquet(ask["entity_df"])
        store.get_historical_features(entity_df=entity, features=ask["features"]).to_df().to_parquet(
            ask["out"], index=False)
    listed = sorted(view.name for view in store.list_feature_views()) if job.get("list") else []
    return {"removed": removed, "online": [_plain(answer) for answer in online], "views": listed}


def _plain(answer: dict) -> dict:
    """Online values as JSON holds them: a missing value as null."""
    def one(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        return value.item() if hasattr(value, "item") else value
    return {name: [one(v) for v in values] for name, values in answer.items()}


def serve() -> int:
    """Answer each job on stdin until it closes; stdout holds the answers alone (fd 1 is pointed at stderr, so
    output written below Python's ``sys.stdout`` cannot land in one)."""
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    for line in sys.stdin:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                reply = {"answer": run(json.loads(line))}
        except Exception:  # a job that fails is answered, and the next one served
            reply = {"error": "\n".join(traceback.format_exc().strip().splitlines()[-12:])}
        answers.write(json.dumps(reply) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve())
