"""`maximus demo` end to end: a small real experiment, its last run in detail, then the step tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_demo_runs_an_experiment_and_prints_run_details_and_step_tables(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "maximus", "demo", "--duration", "2", "--workdir",
                             str(tmp_path / "work"), "--results", str(tmp_path / "results.db")],
                            capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for expected in ("tpmC", "NOPM", "TPM", "New-Order", "Payment", "Order-Status", "Deferred-Delivery",
                     "Stock-Level", "Input validity (5.5.1.5)", "Consistency (3.3.2)", "Load time:", "TPC-C-like",
                     "Experiment 1: demo", "Step 0: baseline", "Step 1: page size 8K (page_size 4096 → 8192)",
                     "Step 2: WAL journal (journal_mode delete → wal)", "6 of 6 runs finished", "Summary:",
                     "of 2 steps significant"):
        assert expected in result.stdout, expected
    assert "FAIL" not in result.stdout
    report = tmp_path / "maximus-report-1.html"
    assert f"Report: {report.name}" in result.stdout and report.stat().st_size > 1_000_000  # plotly inlined
    assert "<script src=" not in report.read_text()  # self-contained: nothing to fetch
    assert result.stdout.count("run 6/6") == 1
    runs = subprocess.run([sys.executable, "-m", "maximus", "runs", "--results", str(tmp_path / "results.db")],
                          capture_output=True, text=True, timeout=60)
    assert runs.returncode == 0 and runs.stdout.count("complete") == 6
