"""Listing stored runs: `maximus runs` over a results database of many runs, against analysing each run whole (what
`runs` did before it counted each headline in one query), measured side by side in one run. Target: 1,000 runs
listed in under a second, the command's own start included.

The runs are synthetic, stored through the results store as real runs are: each a 20-s window of TPC-C samples
(New-Order, Payment and the others at the mix's shares), so only the listing is measured, not a driver. Usage:

    .venv/bin/python bench/runs_listing.py [--runs 1000] [--samples 2000] [--smoke]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from maximus.analysis.run import analyse_run, listed_runs
from maximus.records import EMBEDDED, Outcome, RunSpec, RunStart, RunStatus, TxnSample
from maximus.samples import RunEnd
from maximus.workloads.tpcc import Tpcc
from maximus.store import ResultsStore

MIX = (("new_order", 45), ("payment", 43), ("order_status", 4), ("delivery", 4), ("stock_level", 4))
SPEC = RunSpec("sqlite", {"journal_mode": "wal"}, "tpcc", {"warehouses": 1, "keying": False, "mix": "deck"}, 2,
               5.0, 20.0, 1, database="tpcc-1wh", options={EMBEDDED: "yes"})


def main() -> None:
    options = _arguments()
    with tempfile.TemporaryDirectory(prefix="maximus-bench-runs-") as folder:
        results = Path(folder) / "results.db"
        began = time.monotonic()
        _store_runs(results, options.runs, options.samples)
        print(f"stored {options.runs:,} runs of {options.samples:,} samples in {time.monotonic() - began:.1f} s")
        command = _timed_command(results)
        listing = _timed(lambda: _listed(results))
        analysed = _timed(lambda: _analysed(results))
    print(f"`maximus runs` (the command, start included): {command:.3f} s")
    print(f"listed_runs (the store counts):              {listing:.3f} s")
    print(f"analyse_run of every run (before):            {analysed:.3f} s")
    print(f"ratio before/now (in-process): {analysed / listing:.1f}x; target: the command under 1 s "
          f"({'met' if command < 1.0 else 'not met'})")
    if options.smoke:
        print("smoke mode: tiny sizes, the figures say nothing")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=2000, help="transactions per run")
    parser.add_argument("--smoke", action="store_true", help="seconds: 20 runs of 200 samples")
    options = parser.parse_args()
    if options.smoke:
        options.runs, options.samples = 20, 200
    return options


def _store_runs(results: Path, runs: int, samples: int) -> None:
    rng = random.Random(1)
    names = [name for name, weight in MIX for _ in range(weight)]
    tpcc = Tpcc()
    reading = tpcc.reading(tpcc.settings(SPEC.settings), SPEC.terminals)  # as a run stores it when it begins
    store = ResultsStore(results)
    try:
        for _ in range(runs):
            run_id = store.begin_run(RunStart(SPEC, effective_knobs={}, engine_settings={}, load_seconds=1.0,
                                              loaded_in_run=False, load_seed=1, constants={}, environment={},
                                              reading=reading))
            drawn = [TxnSample(rng.randrange(2), rng.choice(names), start, rng.uniform(0.001, 0.02), Outcome.COMMITTED)
                     for start in sorted(rng.uniform(0.0, 25.0) for _ in range(samples))]
            store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, drawn, elapsed_s=25.0))
    finally:
        store.close()


def _timed_command(results: Path) -> float:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "maximus", "runs", "--results", str(results)], capture_output=True,
                          text=True, check=True)
    elapsed = time.monotonic() - began
    assert done.stdout.count(" complete ") >= 1, done.stdout[-500:]
    return elapsed


def _listed(results: Path) -> int:
    store = ResultsStore(results)
    try:
        return sum(headline for _, _, headline in listed_runs(store))
    finally:
        store.close()


def _analysed(results: Path) -> int:
    store = ResultsStore(results)
    try:
        return sum(analyse_run(store, record.id).figures.headline for record in store.runs())
    finally:
        store.close()


def _timed(work) -> float:
    began = time.monotonic()
    work()
    return time.monotonic() - began


if __name__ == "__main__":
    main()
