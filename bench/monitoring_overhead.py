"""Throughput cost of monitoring: monitored and unmonitored SQLite runs in alternation, same pristine data.

Every run starts from the same pristine 1-warehouse build (WAL, synchronous=normal: the fastest and so
the most sensitive configuration). Runs come in pairs, one monitored and one not, and the order inside
a pair alternates (monitored first, then unmonitored first, ...), so a drift of the machine during
the benchmark does not favour either side. For each pair it prints the throughput of both runs and
their ratio; at the end, the mean ratio with its spread, and the CPU time the monitor's own readings
took. The target is a cost below 1 %. It prints figures and asserts nothing.

Usage (from the repository root):

    .venv/bin/python bench/monitoring_overhead.py [--pairs 3] [--duration 15] [--warmup 3] [--terminals 2]
                                                  [--workdir DIR] [--smoke]

--smoke runs 2 pairs of 1-s runs (both orders within a pair, and a spread), in seconds: it checks that the script
still works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from maximus import api
from maximus.records import RunStatus

KNOBS = {"journal_mode": "wal", "synchronous": "normal"}
WAREHOUSES = 1
SEED = 1
SMOKE_NOTICE = ("smoke mode: the smallest sizes and shortest runs, to check that the script works end to end; "
                "its figures mean nothing")
# --smoke's sizes: two pairs, so that each order inside a pair runs and the ratios have a spread
SMOKE = {"pairs": 2, "duration": 1.0, "warmup": 0.5}


@dataclass(frozen=True)
class Options:
    pairs: int
    duration_s: float
    warmup_s: float
    terminals: int
    workdir: Path | None
    smoke: bool


@dataclass(frozen=True)
class Measured:
    monitored: bool
    tpm: float  # all completed business transactions per minute: more events than tpmC, so less noise
    tpmc: int
    sampling_cpu_s: float | None  # the monitor's own readings, in CPU seconds for the whole run


def parse_options(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3, help="monitored/unmonitored pairs (3)")
    parser.add_argument("--duration", type=float, default=15.0, help="measured seconds per run (15)")
    parser.add_argument("--warmup", type=float, default=3.0, help="warm-up seconds per run (3)")
    parser.add_argument("--terminals", type=int, default=2, help="terminals per run (2)")
    parser.add_argument("--workdir", type=Path, help="where to build (default: a temp dir under /tmp, deleted)")
    parser.add_argument("--smoke", action="store_true",
                        help="2 pairs of 1 s runs: checks that the script works")
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**SMOKE)  # an option given on the command line still wins
        args = parser.parse_args(argv)
    return Options(args.pairs, args.duration, args.warmup, args.terminals, args.workdir, args.smoke)


def build(workdir: Path) -> None:
    engine = api.make_engine("sqlite", workdir, api.Build.of("tpcc", {"warehouses": WAREHOUSES}), KNOBS)
    if not engine.has_snapshot():
        seconds = api.load_database(engine, api.Build.of("tpcc", {"warehouses": WAREHOUSES}), SEED).seconds
        print(f"built {WAREHOUSES} warehouse in {seconds:.1f} s ({engine.workdir / engine.database})")


def measure(options: Options, workdir: Path, monitored: bool) -> Measured:
    results = workdir / "results.db"
    run = api.BenchmarkOptions(knobs=KNOBS, settings={"warehouses": WAREHOUSES}, terminals=options.terminals,
                               warmup_s=options.warmup_s, duration_s=options.duration_s, seed=SEED,
                               workdir=workdir, results=results, check=False, monitor=monitored)
    outcome = api.run_benchmark(run)
    if outcome.status is not RunStatus.COMPLETE:  # interrupted (Ctrl-C) or failed: nothing to compare, stop here
        raise SystemExit(f"Maximus's run {outcome.run_id} {outcome.status.value}: "
                         f"{'; '.join(outcome.result.errors) or 'no error reported'}")
    store = api.open_results(results)
    try:
        report = api.analyse_run(store, outcome.run_id)
    finally:
        store.close()
    return Measured(monitored, report.figures.tpm, report.figures.headline,
                    report.monitoring.figures.sampling_cpu_seconds)


def run_pair(options: Options, workdir: Path, index: int) -> tuple[Measured, Measured]:
    order = (True, False) if index % 2 == 0 else (False, True)
    first, second = (measure(options, workdir, monitored) for monitored in order)
    return (first, second) if first.monitored else (second, first)


def report_pair(index: int, monitored: Measured, plain: Measured) -> float:
    ratio = monitored.tpm / plain.tpm
    first = "monitored" if index % 2 == 0 else "unmonitored"
    print(f"pair {index + 1}: monitored {monitored.tpm:9,.0f} TPM ({monitored.tpmc:,} tpmC) · unmonitored "
          f"{plain.tpm:9,.0f} TPM ({plain.tpmc:,} tpmC) · ratio {ratio:.4f} ({first} first)")
    return ratio


def summarise(ratios: list[float], monitored: list[Measured], options: Options) -> None:
    mean = statistics.fmean(ratios)
    spread = statistics.stdev(ratios) if len(ratios) > 1 else float("nan")
    print(f"mean ratio monitored/unmonitored {mean:.4f}, standard deviation {spread:.4f} over {len(ratios)} pairs "
          f"(min {min(ratios):.4f}, max {max(ratios):.4f}): throughput cost {100 * (1 - mean):+.2f} %"
          f" ± {100 * spread / len(ratios) ** 0.5:.2f} % (standard error); target < 1 %")
    if 100 * spread / len(ratios) ** 0.5 > 1.0:
        print("the pairs vary by more than the 1 % target, so throughput alone cannot resolve the cost here: more "
              "or longer pairs, or a quieter machine, would; the CPU the monitor itself used bounds it more tightly")
    costs = [m.sampling_cpu_s for m in monitored if m.sampling_cpu_s is not None]
    if costs:
        seconds = options.warmup_s + options.duration_s
        per_s = 1000 * statistics.fmean(costs) / seconds
        print(f"the monitor's own readings: {per_s:.2f} ms of CPU per second of run "
              f"({per_s / 10:.3f} % of one CPU)")


def main(argv: list[str]) -> None:
    options = parse_options(argv)
    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="maximus-bench-monitoring-", dir="/tmp"))
    if options.smoke:
        print(SMOKE_NOTICE)
    print(f"SQLite {KNOBS}, {options.terminals} terminals, {options.pairs} pairs of {options.warmup_s:g} s warm-up "
          f"+ {options.duration_s:g} s measured, every run from the same pristine build in {workdir}")
    try:
        build(workdir)
        ratios, monitored = [], []
        for index in range(options.pairs):
            with_monitor, without = run_pair(options, workdir, index)
            ratios.append(report_pair(index, with_monitor, without))
            monitored.append(with_monitor)
        summarise(ratios, monitored, options)
    finally:
        if options.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
