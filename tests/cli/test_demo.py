"""`maximus demo` end to end: builds, runs, and prints every part of the result the README promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_demo_prints_figures_latencies_validity_and_consistency(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "maximus", "demo", "--duration", "3", "--workdir",
                             str(tmp_path / "work"), "--results", str(tmp_path / "results.db")],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    for expected in ("tpmC", "NOPM", "TPM", "New-Order", "Payment", "Order-Status", "Deferred-Delivery",
                     "Stock-Level", "Input validity (5.5.1.5)", "Consistency (3.3.2)", "Load time:",
                     "TPC-C-like", "Stored as run 1"):
        assert expected in result.stdout, expected
    assert "FAIL" not in result.stdout
    assert result.stdout.count("│ pass") == 11  # all twelve but condition 11, which needs a fresh load
    runs = subprocess.run([sys.executable, "-m", "maximus", "runs", "--results", str(tmp_path / "results.db")],
                          capture_output=True, text=True, timeout=60)
    assert runs.returncode == 0 and "complete" in runs.stdout
