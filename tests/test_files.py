"""Local records stay where Recall keeps them, whatever names the graph holds, and concurrent writers of one
record never leave half of it, nor undo one another's part."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Callable

from recall_dagster.files import (
    read_json_object,
    rewrite_record,
    safe_stem,
    update_json,
    write_atomically,
    write_record,
)


def test_a_name_from_the_graph_cannot_write_outside_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "evidence" / "governance"
    paths = write_record(folder, "../../../../tmp/x/churn", {"model": "x"}, "# x\n", "governance evidence")
    assert all(p.parent == folder for p in paths), paths
    assert [p.name for p in paths] == ["tmp_x_churn.json", "tmp_x_churn.md"]
    assert safe_stem("..") == "unnamed" and safe_stem("fraud_detector-2") == "fraud_detector-2"


def test_a_file_named_after_the_graph_never_spells_a_password_it_held() -> None:
    """A model named with a DSN in it: the evidence file's name is printed and listed, so it is masked too."""
    stem = safe_stem("churn postgresql://svc:pw-in-a-dsn-42@warehouse:5432/db")
    assert "pw-in-a-dsn-42" not in stem and stem.startswith("churn_postgresql") and "warehouse_5432_db" in stem


def test_an_evidence_record_never_spells_a_password_it_was_given(tmp_path: Path) -> None:
    name = "churn postgresql://svc:pw-in-a-dsn-42@warehouse:5432/db"
    paths = write_record(tmp_path, name, {"model": name}, f"# {name}\n", "evidence")
    assert not any("pw-in-a-dsn-42" in p.read_text() for p in paths)
    assert json.loads(paths[0].read_text())["model"] == "churn postgresql://[redacted]@warehouse:5432/db"


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


def at_once(writers: int, write: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_writers_laying_their_parts_over_one_record_at_once_keep_every_part(tmp_path: Path) -> None:
    """Shards recording their tables' baselines, two graphs' ledger sections: each reads the latest whole."""
    target = tmp_path / "state" / "schema_baselines.json"

    def write(n: int) -> None:
        for i in range(25):
            update_json(target, lambda data, i=i: {**data, f"{n}-{i}": {"id": "int"}}, "schema baselines")

    at_once(8, write)
    assert len(read_json_object(target, "schema baselines")) == 8 * 25, "no writer undid another's part"


def test_writers_of_one_evidence_record_each_replace_a_whole_pair_and_see_the_one_before(tmp_path: Path) -> None:
    """A metric gate and a ``recall diagnose`` of one version: exactly one of them replaced each record."""
    folder, seen = tmp_path / "evidence" / "diagnose", []

    def write(n: int) -> None:
        for i in range(10):
            _, previous = rewrite_record(folder, "churn-v2-vs-v1", {"by": f"{n}.{i}"}, f"by {n}.{i}\n", "evidence")
            seen.append(previous.get("by"))

    at_once(8, write)
    last = read_json_object(folder / "churn-v2-vs-v1.json", "evidence")["by"]
    assert (folder / "churn-v2-vs-v1.md").read_text() == f"by {last}\n", "the JSON and the Markdown of one writer"
    assert seen.count(None) == 1 and len(set(seen) - {None}) == 79 and last not in seen, (
        "each record but the last was replaced by exactly one writer")
