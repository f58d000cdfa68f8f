"""The incident lifecycle as Markdown a person reads in the Dagster UI."""

from __future__ import annotations

from typing import Any, Mapping

from recall_dagster.narrate import run_label
from recall_dagster.scan_markdown import table


def incidents_table(synced: Mapping[str, Any]) -> str:
    """Every incident this sync touched or left open, with what each poisons."""
    rows = [
        (what, i["state"], i["severity"] or "", ", ".join(i["tests"]),
         "; ".join(f"{m['name']}: {m['summary']}" for m in i["models"]))
        for what in ("raised", "updated", "resolved", "active")
        for i in synced[what]
        if what != "active" or i not in synced["raised"] + synced["updated"]
    ]
    if not rows:
        return "No data incident: every test on the models' data passes."
    return table(("change", "state", "severity", "failing tests", "poisoned"), rows)


def blind_window_table(report: Mapping[str, Any]) -> str:
    """Each root cause's model versions with their verdict, and what to do: the rollback it names, or the next
    step when no version is provably clean."""
    rows = [
        (", ".join(cause["origins"]), model["name"], version["name"], version["verdict"],
         run_label(version.get("trained_by")), model["rollback_note"])
        for cause in report["causes"]
        for model in cause["models"]
        for version in model["versions"]
    ]
    if not rows:
        return "No failing test in the record: no model version trained on bad data."
    return table(("root cause", "model", "version", "verdict", "trained by", "rollback"), rows)

