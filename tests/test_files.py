"""Local records stay where Recall keeps them, whatever names the graph holds, and concurrent writers of one
record never leave half of it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from recall_dagster.files import safe_stem, write_atomically, write_record


def test_a_name_from_the_graph_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "evidence" / "governance"
    paths = write_record(folder, "../../../../tmp/x/churn", {"model": "x"}, "# x\n", "governance evidence")
    assert all(p.parent == folder for p in paths), paths
    assert [p.name for p in paths] == ["tmp_x_churn.json", "tmp_x_churn.md"]
    assert safe_stem("..") == "unnamed" and safe_stem("fraud_detector-2") == "fraud_detector-2"


def test_writers_of_one_record_at_once_each_leave_a_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "state" / "snapshot.json"
    bodies = [json.dumps({"writer": n, "pad": "x" * 200_000}) for n in range(8)]
    failures: list[Exception] = []

    def write(body: str) -> None:
        for _ in range(20):
            try:
                write_atomically(target, body, "snapshot")
            except Exception as err:  # a shared temporary name: one writer renames the other's file away
                failures.append(err)

    threads = [threading.Thread(target=write, args=(body,)) for body in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [], failures[:1]
    assert target.read_text() in bodies, "one writer's whole record, never a mix"
    assert [p.name for p in target.parent.iterdir()] == ["snapshot.json"], "no temporary file left behind"
