"""`maximus compare --fail-if-slower` as a CI gate, on a results store holding two runs of known throughput."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from maximus.records import ARRIVALS_OPTION, RATE, Outcome, RunSpec, RunStart, RunStatus, TxnSample
from maximus.samples import RunEnd
from maximus.store import ResultsStore


def _stored(store: ResultsStore, samples: list[TxnSample], options: dict[str, str] | None = None) -> int:
    """A complete 1-warehouse SQLite run of a 20 s measured window holding ``samples``."""
    spec = RunSpec("sqlite", {}, "tpcc", {"warehouses": 1, "keying": False, "mix": "deck"}, 1, 0.0, 20.0, 1,
                   options=options or {})
    run_id = store.begin_run(RunStart(spec, effective_knobs={}, engine_settings={}, load_seconds=1.0,
                                      loaded_in_run=True, load_seed=1, constants={}, environment={}))
    store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, samples, elapsed_s=20.0))
    return run_id


def _run(store: ResultsStore, per_second: int) -> int:
    """``per_second`` New-Orders each second (plus a little jitter)."""
    return _stored(store, [TxnSample(0, "new_order", second + (i + 0.5) / (per_second + second % 3), 0.001,
                                     Outcome.COMMITTED)
                           for second in range(20) for i in range(per_second + second % 3)])


def _two_runs(path: Path, make: Callable[[ResultsStore, Any], int], a: Any, b: Any) -> Path:
    """A results store at ``path`` holding run 1, ``make(store, a)``, and run 2, ``make(store, b)``."""
    store = ResultsStore(path)
    make(store, a)
    make(store, b)
    store.close()
    return path


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return _two_runs(tmp_path / "results.db", _run, 100, 70)


def _compare(results: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", "compare", "1", "2", "--results", str(results), *extra],
                          capture_output=True, text=True, timeout=60)


def test_a_significant_loss_beyond_the_allowance_fails_the_gate(results: Path) -> None:
    failed = _compare(results, "--fail-if-slower", "10")
    assert failed.returncode == 5
    assert failed.stderr.strip().startswith("error: run 2 is 2") and "more than the allowed 10 %" in failed.stderr


def test_a_loss_within_the_allowance_passes(results: Path) -> None:
    assert _compare(results, "--fail-if-slower", "40").returncode == 0


def test_json_reports_the_ratio_and_method(results: Path) -> None:
    data = json.loads(_compare(results, "--json").stdout)
    assert data["verdict"] == "slower" and data["method"] == "batch means within one run"
    assert 0.65 < data["ratio"] < 0.75 and data["high"] < 1


def _fixed_rate_run(store: ResultsStore, latency_ms: float) -> int:
    """100 New-Orders a second, as a fixed-rate run keeps them, each ``latency_ms`` (with a little jitter) from its
    intended start, a tenth of it waiting behind the one before."""
    samples = []
    for n in range(2000):
        intended, latency = n / 100, latency_ms / 1000 * (1 + (n % 7) / 20)
        samples.append(TxnSample(0, "new_order", intended + latency / 10, latency * 0.9, Outcome.COMMITTED,
                                 intended=intended))
    return _stored(store, samples, {RATE: "100", ARRIVALS_OPTION: "regular"})


@pytest.fixture
def fixed_rate_results(tmp_path: Path) -> Path:
    return _two_runs(tmp_path / "results.db", _fixed_rate_run, 4.0, 6.0)


def test_two_fixed_rate_runs_are_compared_by_latency_from_the_intended_start(fixed_rate_results: Path) -> None:
    """Both did the 100/s asked of them: their throughput says nothing, their latency does (lower is faster)."""
    data = json.loads(_compare(fixed_rate_results, "--json").stdout)
    assert data["metric"] == "New-Order p90 latency ms" and data["higher_is_better"] is False
    assert data["verdict"] == "slower" and 1.45 < data["ratio"] < 1.55 and data["low"] > 1
    # p90 of 4 ms + jitter, each batch's from the run's histograms: to their three significant digits
    assert 4.0 < min(data["a"]["values"]) and max(data["a"]["values"]) <= 4.0 * 1.3 * 1.001
    shown = _compare(fixed_rate_results).stdout
    assert "New-Order p90 latency ms" in shown and "compared by latency from the intended start" in shown
    failed = _compare(fixed_rate_results, "--fail-if-slower", "20")
    assert failed.returncode == 5 and "% slower than run 1" in failed.stderr
    assert _compare(fixed_rate_results, "--fail-if-slower", "80").returncode == 0
    backwards = subprocess.run([sys.executable, "-m", "maximus", "compare", "2", "1", "--results",
                                str(fixed_rate_results), "--fail-if-slower", "1"], capture_output=True, text=True,
                               timeout=60)
    assert backwards.returncode == 0 and "faster" in backwards.stdout
