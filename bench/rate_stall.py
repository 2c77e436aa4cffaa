"""Fixed-throughput runs against the targets of issue #45: a stalled server, and the scheduler's own precision.

On a managed PostgreSQL server (1 warehouse, server-side transactions), real runs (``maximus.api.run_benchmark``):

1. At ``--rate`` transactions a second over ``--terminals`` terminals: undisturbed, then with every server process
   stopped (SIGSTOP) for ``--stall`` seconds a third into the window, then the same stall in a closed-loop run. Per
   run, over the terminals' transactions in the window: the latency p99 (from each transaction's intended start),
   the service-time p99 (from its actual start), how many took longer than a second either way, and the verdict.
   Target: the stalled fixed-rate run's latency p99 at least ``--stall`` - 1 s while its service-time p99 stays near
   the undisturbed run's; the closed-loop run shows the stall in one transaction a terminal.
2. At ``--error-rate`` (1,000 a second), undisturbed: the scheduler's start-time error p99 (how late it woke a
   terminal that waited for its intended start; ``analysis.rate``). Target: under 1 ms.

Usage (from the repository root, as root: the server runs as the postgres user):

    .venv/bin/python bench/rate_stall.py [--rate 500] [--error-rate 1000] [--terminals 8] [--duration 60]
                                         [--stall 5] [--smoke]

--smoke: 1.5-s windows at 50 and 100 a second, a 0.5-s stall: it checks that the script works, its figures mean
nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from maximus import api
from maximus.engines import _process
from maximus.records import Outcome

SMOKE_NOTICE = ("smoke mode: the smallest sizes, to check that the script works end to end; "
                "its figures mean nothing")
PREFIX = "maximus-bench-rate-"  # tests/test_bench.py checks that nothing of this name is left behind
ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


class ServerStall:
    """A run observer that SIGSTOPs the server's processes ``at`` seconds from the origin for ``seconds``."""

    def __init__(self, server_pid: Callable[[], int | None], at: float, seconds: float) -> None:
        self.server_pid, self.at, self.seconds, self.stopped, self.done = server_pid, at, seconds, [], False

    def started(self, warmup_s: float, duration_s: float, headline: Any) -> None:
        return None

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None:
        if not self.stopped and elapsed_s >= self.at:
            pid = self.server_pid()
            self.stopped = [pid, *_process.descendants(pid)] if pid else []
            self._signal(signal.SIGSTOP)
        elif self.stopped and not self.done and elapsed_s >= self.at + self.seconds:
            self.resume()

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.done = True

    def _signal(self, which: signal.Signals) -> None:
        for pid in self.stopped:
            try:
                os.kill(pid, which)
            except ProcessLookupError:
                pass


@dataclass(frozen=True)
class Figures:
    name: str
    achieved: float
    latency_p99: float
    service_p99: float
    held_back: int  # latency over a second
    met: int  # service time over a second
    verdict: str
    start_error_p99: float


def _run(workdir: Path, name: str, rate: float | None, terminals: int, warmup: float, duration: float,
         stall: float) -> Figures:
    engine = api.make_engine("postgres", workdir, ONE_WAREHOUSE, {})
    observer = ServerStall(engine.server_pid, warmup + duration / 3, stall) if stall else None
    results = workdir / "results.db"
    try:
        outcome = api.run_benchmark(api.BenchmarkOptions(engine="postgres", workdir=workdir, results=results,
                                                         terminals=terminals, warmup_s=warmup, duration_s=duration,
                                                         monitor=False, check=False, rate=rate), observer=observer)
    finally:
        if observer:
            observer.resume()
    store = api.open_results(results)
    try:
        report = api.analyse_run(store, outcome.run_id)
    finally:
        store.close()
    window = report.record.window
    timed = [s for s in outcome.result.samples if s.outcome is not Outcome.FAILED and window.contains(s)
             and not s.transaction.startswith("deferred_")]
    latency = np.array([s.scheduled_latency for s in timed])
    service = np.array([s.latency for s in timed])
    rate_figures = report.rate
    return Figures(name, len(timed) / (window.end - window.start), float(np.percentile(latency, 99)),
                   float(np.percentile(service, 99)), int((latency > 1).sum()), int((service > 1).sum()),
                   rate_figures.verdict if rate_figures else "closed loop",
                   rate_figures.start_error_p99 if rate_figures else float("nan"))


def _print(figures: Figures) -> None:
    print(f"  {figures.name:<34} {figures.achieved:>8,.1f}/s  latency p99 {figures.latency_p99 * 1000:>8,.1f} ms  "
          f"service p99 {figures.service_p99 * 1000:>8,.1f} ms  over 1 s: {figures.held_back:,} latency, "
          f"{figures.met:,} service")
    print(f"  {'':<34} {figures.verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--error-rate", type=float, default=1000.0)
    parser.add_argument("--terminals", type=int, default=8)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--stall", type=float, default=5.0)
    parser.add_argument("--smoke", action="store_true")
    options = parser.parse_args()
    if options.smoke:
        print(SMOKE_NOTICE)
        options.rate, options.error_rate, options.duration, options.stall = 50.0, 100.0, 1.5, 0.5
    workdir = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/var/tmp"))
    workdir.chmod(0o755)
    try:
        engine = api.make_engine("postgres", workdir, ONE_WAREHOUSE, {})
        with api.running(engine):
            api.load_database(engine, ONE_WAREHOUSE, seed=1)
        _bench(workdir, options)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _bench(workdir: Path, options: argparse.Namespace) -> None:
    warmup = 2.0 if not options.smoke else 0.3
    print(f"Fixed-rate runs on PostgreSQL, 1 warehouse, {options.terminals} terminals, {options.duration:g}-s "
          f"windows, in {workdir}")
    print(f"1. A {options.stall:g}-s SIGSTOP of the server at {options.rate:g} transactions a second")
    calm = _run(workdir, "fixed rate, undisturbed", options.rate, options.terminals, warmup, options.duration, 0)
    stalled = _run(workdir, "fixed rate, stalled", options.rate, options.terminals, warmup, options.duration,
                   options.stall)
    closed = _run(workdir, "closed loop, stalled", None, options.terminals, warmup, options.duration, options.stall)
    for figures in (calm, stalled, closed):
        _print(figures)
    met = stalled.latency_p99 >= options.stall - 1 and stalled.service_p99 <= 1.5 * max(calm.service_p99, 0.001)
    print(f"  target: stalled latency p99 >= {options.stall - 1:g} s ({stalled.latency_p99:,.2f} s) with its service "
          f"p99 within 1.5x the undisturbed run's ({stalled.service_p99 * 1000:,.1f} ms against "
          f"{calm.service_p99 * 1000:,.1f} ms): {'met' if met else 'missed'}")
    print(f"  closed loop: {closed.held_back:,} transactions over 1 s against {stalled.held_back:,} at a fixed rate")
    print(f"2. The scheduler's start-time error at {options.error_rate:g} transactions a second")
    errors = [_run(workdir, f"fixed rate {options.error_rate:g}/s", options.error_rate, options.terminals, warmup,
                   options.duration, 0) for _ in range(1 if options.smoke else 3)]
    for figures in errors:
        _print(figures)
    p99 = statistics.median(f.start_error_p99 for f in errors) * 1000
    print(f"  start-time error p99: median {p99:,.3f} ms of {len(errors)} runs: the target (< 1 ms) is "
          f"{'met' if p99 < 1 else 'missed'}")


if __name__ == "__main__":
    main()
