"""A run's samples in the results store: a row each (before: schema version 11, ``txn_samples``) against columns
(now: ``sample_columns``), measured side by side in one run on the same samples.

The samples are synthetic, shaped as a storage-bound run's (io-random: one transaction, committed, 4 terminals, a
read every 10 µs or so, about one in a thousand failed with an error text), so only the store is measured. For each
way: the time to store them (``finish_run``'s transaction), to read them back as the read side does
(``sample_columns``), and the results database's bytes per sample. Usage:

    .venv/bin/python bench/stored_samples.py [--samples 2000000] [--smoke]
"""

from __future__ import annotations

import argparse
import itertools
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from maximus.records import Outcome, RunSpec, RunStart, RunStatus
from maximus.samples import OUTCOMES, RunEnd, Samples, WITH_ERRORS
from maximus.store import ResultsStore

SPEC = RunSpec("sqlite", {}, "io-random", {}, 4, 1.0, 15.0, 1, database="io")
ROWS_A_SLICE = 65_536  # as the store made its rows before


def main() -> None:
    options = _arguments()
    samples = _samples(options.samples)
    print(f"A run's {options.samples:,} samples in the results store, each way in a database of its own")
    print(f"  {'way':<16}{'store s':>10}{'read s':>10}{'store ns/sample':>18}{'read ns/sample':>16}"
          f"{'bytes/sample':>14}")
    with tempfile.TemporaryDirectory(prefix="maximus-bench-stored-") as folder:
        rows = _measured(Path(folder) / "rows.db", samples, _store_rows)
        columns = _measured(Path(folder) / "columns.db", samples, _store_columns)
    for way, figures in (("rows (before)", rows), ("columns (now)", columns)):
        stored, read, size = figures
        print(f"  {way:<16}{stored:>10.3f}{read:>10.3f}{stored / len(samples) * 1e9:>18,.0f}"
              f"{read / len(samples) * 1e9:>16,.0f}{size / len(samples):>14,.1f}")
    print(f"  ratio columns / rows: store {columns[0] / rows[0]:.3f}, read {columns[1] / rows[1]:.3f}, "
          f"size {columns[2] / rows[2]:.3f}")
    if options.smoke:
        print("smoke mode: tiny sizes, the figures say nothing")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2_000_000)
    parser.add_argument("--smoke", action="store_true", help="seconds: 20,000 samples")
    options = parser.parse_args()
    if options.smoke:
        options.samples = 20_000
    return options


def _samples(count: int) -> Samples:
    rng = np.random.default_rng(1)
    start = np.cumsum(rng.exponential(1e-5, count))
    failed = rng.random(count) < 0.001
    errors = np.full(count, "", dtype=object)
    errors[failed] = "database is locked"
    columns = {"transaction": np.zeros(count, np.int32), "terminal": rng.integers(0, 4, count, dtype=np.int32),
               "start": start, "latency": rng.exponential(3e-5, count),
               "outcome": np.where(failed, OUTCOMES.index(Outcome.FAILED), 0).astype(np.int8),
               "attempts": np.ones(count, np.int32), "intended": np.full(count, np.nan), "error": errors}
    return Samples(("read_row",), **{name: columns[name].astype(kind) for name, kind in WITH_ERRORS.items()})


def _measured(path: Path, samples: Samples, store_them: Callable[[ResultsStore, Path, int, Samples], None]
              ) -> tuple[float, float, int]:
    store = ResultsStore(path)
    try:
        run_id = store.begin_run(RunStart(SPEC, effective_knobs={}, engine_settings={}, load_seconds=1.0,
                                          loaded_in_run=False, load_seed=1, constants={}, environment={}))
        began = time.perf_counter()
        store_them(store, path, run_id, samples)
        stored = time.perf_counter() - began
        began = time.perf_counter()
        read = store.sample_columns(run_id)
        reading = time.perf_counter() - began
    finally:
        store.close()
    np.testing.assert_array_equal(read.latency, samples.latency)
    return stored, reading, path.stat().st_size


def _store_columns(store: ResultsStore, path: Path, run_id: int, samples: Samples) -> None:
    store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, samples))


def _store_rows(store: ResultsStore, path: Path, run_id: int, samples: Samples) -> None:
    """The samples as ``finish_run`` stored them before, a row each, in one transaction."""
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO txn_samples (run_id, terminal, transaction_name, start, latency, outcome, "
                       "attempts, error, intended) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", _rows(run_id, samples))


def _rows(run_id: int, samples: Samples) -> Iterator[tuple]:
    names = np.array(samples.names, dtype=object)
    outcomes = np.array([outcome.value for outcome in OUTCOMES], dtype=object)
    assert samples.error is not None
    for first in range(0, len(samples), ROWS_A_SLICE):
        part = slice(first, first + ROWS_A_SLICE)
        intended = samples.intended[part].astype(object)
        intended[np.isnan(samples.intended[part])] = None
        yield from zip(itertools.repeat(run_id), samples.terminal[part].tolist(),
                       names[samples.transaction[part]].tolist(), samples.start[part].tolist(),
                       samples.latency[part].tolist(), outcomes[samples.outcome[part]].tolist(),
                       samples.attempts[part].tolist(), samples.error[part].tolist(), intended.tolist())


if __name__ == "__main__":
    main()
