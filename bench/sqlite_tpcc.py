"""SQLite TPC-C-like benchmark: Maximus against the figures quoted for BenchBase on this machine.

One command measures, side by side and in one run:

1. the disk's raw SQLite commit ceiling now (a 1-row UPDATE per transaction, rollback journal and WAL,
   both synchronous=full), which bounds New-Order throughput when commits are fsync-bound;
2. the time to build 1 warehouse at the peer's settings (journal_mode=delete, synchronous=full,
   page_size 4096), against BenchBase's quoted 231 s;
3. New-Orders per minute at 1, 2 and 4 terminals for four SQLite configurations, each run starting
   from the same pristine copy of that one build, against BenchBase's quoted 25,000 NO/min.

It prints figures and asserts nothing. Usage (from the repository root):

    .venv/bin/python bench/sqlite_tpcc.py [--duration S] [--warmup S] [--workdir DIR] [--quick | --smoke]

--smoke runs every step with the smallest sizes (1-s runs at 1 terminal, 0.2-s ceiling probes), in seconds: it
checks that the script still works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from maximus import api
from maximus.analysis.metrics import RunFigures, run_figures
from maximus.driver.scheduler import DriveSpec, drive
from maximus.engines import Engine
from maximus.workloads.tpcc import Tpcc

PEER_BUILD_S = 231.0  # BenchBase on SQLite, 1 warehouse, this machine: quoted in our issue, not measured here
PEER_NO_PER_MIN = 25_000.0  # BenchBase on SQLite, 1 terminal, peer settings: quoted in our issue
WRITE_SHARE = 0.92  # share of write transactions in the TPC-C mix
NEW_ORDER_SHARE = 0.45  # share of New-Order in the TPC-C mix
WAREHOUSES = 1
SEED = 1

PEER = {"journal_mode": "delete", "synchronous": "full", "page_size": "4096"}
CONFIGS: dict[str, dict[str, str]] = {
    "a peer: delete+full": PEER,
    "b wal+full": {**PEER, "journal_mode": "wal"},
    "c wal+normal": {**PEER, "journal_mode": "wal", "synchronous": "normal"},
    "d wal+normal+cache+mmap": {**PEER, "journal_mode": "wal", "synchronous": "normal",
                                "cache_size": "64MB", "mmap_size": "256MB"},
}
SMOKE_NOTICE = ("smoke mode: the smallest sizes and shortest runs, to check that the script works end to end; "
                "its figures mean nothing")


@dataclass(frozen=True)
class Mode:
    """How long each measurement lasts and which terminal counts run, unless --duration or --warmup says."""

    duration_s: float
    warmup_s: float
    terminals: tuple[int, ...]
    ceiling_s: float


MODES = {"full": Mode(20.0, 3.0, (1, 2, 4), 3.0), "quick": Mode(5.0, 1.0, (1, 2), 1.5),
         "smoke": Mode(1.0, 0.5, (1,), 0.2)}  # 1 terminal is enough for the summary, which reads the 1-terminal row


@dataclass(frozen=True)
class Options(Mode):
    """The mode's sizes, --duration and --warmup where given, and where to build."""

    workdir: Path | None
    smoke: bool


@dataclass(frozen=True)
class Measured:
    config: str
    terminals: int
    figures: RunFigures
    errors: list[str]


def parse_options(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, help="measured seconds per run (20; --quick: 5; --smoke: 1)")
    parser.add_argument("--warmup", type=float, help="warm-up seconds per run (3; --quick: 1; --smoke: 0.5)")
    parser.add_argument("--workdir", type=Path, help="where to build (default: a temp dir under /tmp, deleted)")
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="a short run: 5 s runs, 1 and 2 terminals")
    sizes.add_argument("--smoke", action="store_true",
                       help="1 s runs at 1 terminal: checks that the script works")
    args = parser.parse_args(argv)
    mode = MODES["smoke" if args.smoke else "quick" if args.quick else "full"]
    return Options(args.duration if args.duration is not None else mode.duration_s,
                   args.warmup if args.warmup is not None else mode.warmup_s,
                   mode.terminals, mode.ceiling_s, workdir=args.workdir, smoke=args.smoke)


def commit_rate(workdir: Path, journal_mode: str, synchronous: str, seconds: float) -> float:
    """Commits per second of a one-row UPDATE transaction on a fresh file in ``workdir``."""
    path = workdir / f"ceiling-{journal_mode}-{synchronous}.sqlite"
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(f"PRAGMA journal_mode = {journal_mode}").fetchall()
        connection.execute(f"PRAGMA synchronous = {synchronous}")
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
        connection.execute("INSERT INTO t VALUES (1, 0)")
        commits, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("UPDATE t SET v = v + 1 WHERE id = 1")
            connection.execute("COMMIT")
            commits += 1
        return commits / elapsed
    finally:
        connection.close()
        for suffix in ("", "-journal", "-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)


def new_order_ceiling(commits_per_s: float) -> float:
    """New-Orders per minute if every write transaction costs one fsync-bound commit."""
    return commits_per_s * 60 * NEW_ORDER_SHARE / WRITE_SHARE


def measure_ceiling(workdir: Path, seconds: float) -> dict[str, float]:
    rates = {"delete+full": commit_rate(workdir, "delete", "full", seconds),
             "wal+full": commit_rate(workdir, "wal", "full", seconds)}
    for name, rate in rates.items():
        print(f"  {name:<12} {rate:8.0f} commits/s  -> New-Order/min ceiling {new_order_ceiling(rate):9,.0f}")
    return rates


def build(workdir: Path) -> float:
    """Build 1 warehouse at the peer's settings (and its pristine snapshot); the loader's seconds."""
    engine = api.make_engine("sqlite", workdir, api.Build.of("tpcc", {"warehouses": WAREHOUSES}), PEER)
    result = api.load_database(engine, api.Build.of("tpcc", {"warehouses": WAREHOUSES}), SEED)
    ratio = PEER_BUILD_S / result.seconds
    print(f"  Maximus (measured now): {result.seconds:6.1f} s    knobs {dict(engine.effective_settings)}")
    print(f"  BenchBase (QUOTED from our issue, not measured in this run): {PEER_BUILD_S:.0f} s")
    print(f"  speed-up: {ratio:.1f}x  (target >= 10x: {'met' if ratio >= 10 else 'NOT met'})")
    return result.seconds


def reported(engine: Engine) -> dict[str, str]:
    """The settings SQLite reports back on a connection opened with the run's knobs."""
    session = engine.connect()
    try:
        return engine.reported_settings(session)
    finally:
        session.close()


def run_once(workdir: Path, config: str, knobs: Mapping[str, str], terminals: int, options: Options
             ) -> tuple[Measured, dict[str, str]]:
    """Restore the pristine build, drive ``terminals`` terminals, compute the figures."""
    build = api.Build.of("tpcc", {"warehouses": WAREHOUSES})
    engine = api.make_engine("sqlite", workdir, build, knobs)
    engine.validate_run(terminals)
    prepared = api.prepare_database(engine, build, SEED)
    if prepared.loaded_now:
        raise RuntimeError(f"{config}: expected the shared pristine build, but the database was rebuilt")
    settings_back = reported(engine)
    settings = Tpcc().run_settings(build.settings, SEED, prepared.info, server_side=False)
    spec = DriveSpec(engine, Tpcc(), settings, terminals, options.warmup_s, options.duration_s,
                     deferred_workers=max(1, terminals // 10))
    result = drive(spec)
    figures = run_figures(result.samples, result.window, Tpcc.reported_transactions, Tpcc.headline.transaction)
    return Measured(config, terminals, figures, result.errors), settings_back


def print_row(row: Measured) -> None:
    f = row.figures
    failed = f.outcomes["failed"] + len(row.errors)
    print(f"  {row.config:<24} {row.terminals:>4} {f.headline:>9,} {f.committed:>9,.0f} {f.tpm:>9,.0f} {failed:>6}"
          f" {f.headline / PEER_NO_PER_MIN:>8.2f}x", flush=True)
    for error in row.errors:
        print(f"      error: {error.splitlines()[-1]}")


def run_all(workdir: Path, options: Options) -> list[Measured]:
    print(f"  {'config':<24} {'term':>4} {'NO/min':>9} {'NOPM':>9} {'TPM':>9} {'failed':>6} {'vs peer':>9}")
    rows: list[Measured] = []
    knobs_back: dict[str, dict[str, str]] = {}
    for config, knobs in CONFIGS.items():
        for terminals in options.terminals:
            row, knobs_back[config] = run_once(workdir, config, knobs, terminals, options)
            print_row(row)
            rows.append(row)
    print("\n  SQLite settings per config (as SQLite reports them on a run connection):")
    for config, settings in knobs_back.items():
        print(f"  {config:<24} {' '.join(f'{k}={v}' for k, v in settings.items())}")
    return rows


def summarise(rows: list[Measured], ceiling: Mapping[str, float], ceiling_after: float) -> None:
    peer_1 = next(r for r in rows if r.config.startswith("a ") and r.terminals == 1)
    ratio = peer_1.figures.headline / PEER_NO_PER_MIN
    print(f"  (a) peer settings, 1 terminal: {peer_1.figures.headline:,} NO/min = {ratio:.2f}x the quoted "
          f"{PEER_NO_PER_MIN:,.0f}  (target >= 1.5x: {'met' if ratio >= 1.5 else 'NOT met'})")
    for label, rate in (("before the runs", ceiling["delete+full"]), ("after the runs", ceiling_after)):
        limit = new_order_ceiling(rate)
        print(f"  (a) 1 terminal vs delete+full fsync ceiling {label} ({limit:,.0f} NO/min): "
              f"{peer_1.figures.headline / limit:.2f}")
    best = max(rows, key=lambda r: r.figures.headline)
    print(f"  best: {best.config}, {best.terminals} terminal(s): {best.figures.headline:,} NO/min = "
          f"{best.figures.headline / PEER_NO_PER_MIN:.2f}x the quoted peer figure")


def benchmark(workdir: Path, options: Options) -> None:
    if options.smoke:
        print(SMOKE_NOTICE)
    print(f"SQLite {sqlite3.sqlite_version} (Python sqlite3), workdir {workdir}, {WAREHOUSES} warehouse, "
          f"seed {SEED}, runs {options.warmup_s:g} s warm-up + {options.duration_s:g} s measured, "
          "keying/think times off (TPC-C-like)\n")
    print(f"1. Raw commit ceiling of this disk now ({options.ceiling_s:g} s each, 1-row UPDATE per commit):")
    ceiling = measure_ceiling(workdir, options.ceiling_s)
    print("\n2. Build, 1 warehouse, peer settings:")
    build(workdir)
    print(f"\n3. TPC-C-like runs, each from the pristine build ('vs peer' = NO/min / quoted "
          f"{PEER_NO_PER_MIN:,.0f}):")
    rows = run_all(workdir, options)
    print("\n   Commit ceiling re-measured after the runs (the fsync rate drifts):")
    after = measure_ceiling(workdir, options.ceiling_s)
    print("\nSummary:")
    summarise(rows, ceiling, after["delete+full"])


def main(argv: list[str]) -> int:
    options = parse_options(argv)
    if options.workdir is not None:
        options.workdir.mkdir(parents=True, exist_ok=True)
        benchmark(options.workdir, options)
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="maximus-bench-", dir="/tmp"))
    try:
        benchmark(workdir, options)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
