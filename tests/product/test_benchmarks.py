"""The benchmark scripts run outside the suite; here each runs at its smallest, so an API change cannot leave one
broken until someone needs its figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(script: str, *args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_scan_benchmark_prints_its_stages_against_the_baseline(tmp_path: Path) -> None:
    out = run("scan_bench.py", "--scale", "1", "--repeat", "1", cwd=tmp_path)
    assert "scan, warm (end to end)" in out and "x baseline" in out


def test_the_fuzz_report_ends_with_its_json_line(tmp_path: Path) -> None:
    last = json.loads(run("fuzz_report.py", "--estates", "3", "--fan-in", "50", cwd=tmp_path).splitlines()[-1])
    assert last["estates"] == 3 and last["crashes"] == 0
    assert set(last) == {"estates", "crashes", "recall_errors", "slowest_s", "seconds"}


def test_the_scale_benchmark_ends_with_its_json_line(tmp_path: Path) -> None:
    out = run("scale.py", "--models", "3", "--profile", str(tmp_path / "scan.prof"), cwd=tmp_path)
    last = json.loads(out.splitlines()[-1])
    assert last["models"] == last["production_models"] == 3 and last["write_failures"] == 0
    assert {"entities", "aspects", "build_s", "scan_s", "peak_rss_mib", "baseline_read_s", "scan_over_baseline",
            "per_model_ms", "targets_at_10k"} <= set(last)
    assert (tmp_path / "scan.prof").stat().st_size > 0
    assert last["incremental_findings_as_full"] and {"rescan_unchanged_s", "rescan_one_changed_s"} <= set(last), (
        "each rescan runs in a new process and the one after a change finds what a full scan finds")
    assert last["gms_models"] == 3 and last["gms_findings_as_lite"], "over GMS the scan finds what it finds on Lite"
    assert last["gms_requests"] > 0 and last["per_node_requests"] > 0, "both walks are counted on the stand-in"
