"""What a run's samples cost the process that runs it: its peak memory and its CPU, per sample, the way Maximus
keeps them now (``driver.collected.Collected``: numpy columns, made as the batches arrive) against the way it kept
them before (the batches as they travelled, made a ``TxnSample`` each and sorted at the run's end).

Both ways are fed the same batches, as the terminals send them through the run's queue (pickled): runs of 64
transactions committed at their first attempt (a busy terminal's, nearly all of a closed-loop run) and single
sample tuples (a fixed-rate run's, with their intended starts). Each way runs in a process of its own, so that its
peak resident memory (VmHWM, above the process's own before the first batch) is its alone. Usage:

    .venv/bin/python bench/run_memory.py [--samples 2000000] [--smoke]

--smoke: 50,000 samples, in seconds: it checks that the script works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import pickle
import re
import subprocess
import sys
import time
from array import array
from pathlib import Path
from typing import Callable

from maximus.driver.collected import Collected
from maximus.records import Outcome, TxnSample

SMOKE_NOTICE = ("smoke mode: the smallest sizes, to check that the script works end to end; "
                "its figures mean nothing")
BATCH = 64
TERMINALS = 4
NAMES = ("new_order", "payment", "order_status", "delivery", "stock_level")
ORIGIN = 1000.0
_OUTCOME_OF = {outcome.value: outcome for outcome in Outcome}


def _peak_kib() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", Path("/proc/self/status").read_text()).group(1))  # type: ignore[union-attr]


def _batches(kind: str, samples: int) -> list[bytes]:
    """The pickled messages of ``samples`` transactions: terminals taking turns, each batch 64 transactions on."""
    made, at = [], ORIGIN
    for number in range(samples // BATCH):
        terminal, names = number % TERMINALS, [NAMES[(number + n) % len(NAMES)] for n in range(BATCH)]
        times = [at + step * 1e-5 for step in range(2 * BATCH)]
        at += 2 * BATCH * 1e-5 / TERMINALS
        if kind == "runs":
            made.append(pickle.dumps(([], [(terminal, names, array("d", times))])))
        else:
            made.append(pickle.dumps(([(terminal, name, started - ORIGIN, 1e-5, Outcome.COMMITTED.value, 1, "",
                                        started - ORIGIN - 1e-6) for name, started in zip(names, times[0::2])], [])))
    return made


class Records:
    """Before: the batches kept as they travelled, each sample made a ``TxnSample`` and sorted at the end."""

    def __init__(self) -> None:
        self.samples: list[tuple] = []
        self.runs: list[tuple] = []

    def add(self, samples: list[tuple], runs: list[tuple], origin: float) -> None:
        self.samples.extend(samples)
        self.runs.extend(runs)

    def end(self) -> list[TxnSample]:
        expanded = ((terminal, name, started - ORIGIN, finished - started, Outcome.COMMITTED.value, 1, "", None)
                    for terminal, names, times in self.runs
                    for name, started, finished in zip(names, times[0::2], times[1::2]))
        records = [TxnSample(t, n, s, lat, _OUTCOME_OF[o], a, e, i) for t, n, s, lat, o, a, e, i in
                   (*self.samples, *expanded)]
        self.samples, self.runs = [], []
        return sorted(records, key=lambda sample: sample.start)


def _child(way: str, kind: str, samples: int) -> None:
    """One way fed one kind of batch: prints its figures as JSON."""
    batches = _batches(kind, samples)
    keeper: Records | Collected = Records() if way == "records" else Collected()
    end: Callable[[], object] = keeper.end if isinstance(keeper, Records) else keeper.samples
    before, during = _peak_kib(), 0.0
    for message in batches:
        tuples, runs = pickle.loads(message)
        started = time.perf_counter()
        keeper.add(tuples, runs, ORIGIN)
        during += time.perf_counter() - started
    batches.clear()
    started = time.perf_counter()
    kept = end()
    ended = time.perf_counter() - started
    print(json.dumps({"count": len(kept), "peak_bytes": (_peak_kib() - before) * 1024,  # type: ignore[arg-type]
                      "during_s": during, "end_s": ended}))


def _measured(way: str, kind: str, samples: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, "--child", way, kind, str(samples)], capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2_000_000)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    samples = 50_000 if args.smoke else args.samples
    if args.smoke:
        print(SMOKE_NOTICE)
    print(f"A run's samples in the process that runs it: {samples:,} a way, each way in a process of its own")
    print(f"  {'batches':<8} {'way':<17} {'peak B/sample':>13} {'CPU ns/sample in the run':>25} "
          f"{'at its end':>10}")
    figures: dict[tuple[str, str], dict[str, float]] = {}
    for kind in ("runs", "tuples"):
        for way in ("records", "columns"):
            got = figures[kind, way] = _measured(way, kind, samples)
            assert got["count"] == samples // BATCH * BATCH, got
            label = "records (before)" if way == "records" else "columns (now)"
            print(f"  {kind:<8} {label:<17} {got['peak_bytes'] / got['count']:>13,.0f} "
                  f"{got['during_s'] / got['count'] * 1e9:>25,.0f} {got['end_s'] / got['count'] * 1e9:>10,.0f}")
    for kind in ("runs", "tuples"):
        now, before = figures[kind, "columns"], figures[kind, "records"]
        cpu = (now["during_s"] + now["end_s"]) / (before["during_s"] + before["end_s"])
        print(f"  ratio columns / records, {kind}: peak memory {now['peak_bytes'] / before['peak_bytes']:.2f}, "
              f"CPU in the run and at its end {cpu:.2f}")


if __name__ == "__main__":
    main()
