"""The power-cut layer's cost: SQLite commits on the layer's mount against the same on its backing directory's file
system, without the layer.

Each measurement makes a fresh database (WAL mode) and times a loop of one-row transactions, each committed. Rounds
alternate which side goes first, so a drift of the machine favours neither. Two settings:

- ``synchronous=off``: no sync at all, so the time is the file system's own path: the layer's pass-through cost
  (every write crosses the kernel into a Python process and is remembered);
- ``synchronous=full``: a sync at each commit, which the layer only records (the disk is its model in memory), while
  the backing file system goes to the disk: the mount can be faster here, and is no throughput figure.

It prints each round, the median ratio (time on the mount / time without it) per setting, and the layer's cost per
FUSE write, from the layer's own count of writes. It asserts nothing.

Usage (from the repository root):

    .venv/bin/python bench/powercut_overhead.py [--commits 2000] [--rounds 3] [--workdir DIR] [--smoke]

--smoke runs 2 rounds of 50 commits, in seconds: it checks that the script still works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from maximus.durability.mount import PowerCutMount

SETTINGS = ("off", "full")
ROW = "x" * 200
SMOKE_NOTICE = ("smoke mode: the smallest sizes, to check that the script works end to end; "
                "its figures mean nothing")
SMOKE = {"commits": 50, "rounds": 2}
PREFIX = "maximus-bench-powercut-"  # tests/test_bench.py checks that nothing of this name is left behind


@dataclass(frozen=True)
class Options:
    commits: int
    rounds: int
    workdir: Path | None
    smoke: bool


@dataclass(frozen=True)
class Round:
    mount_s: float
    plain_s: float
    writes: int  # FUSE writes the layer saw during the mount's run

    @property
    def ratio(self) -> float:
        return self.mount_s / self.plain_s


def parse_options(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=2000, help="committed transactions per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per setting, each with both sides")
    parser.add_argument("--workdir", type=Path, help="where the backing and plain directories go (default /tmp)")
    parser.add_argument("--smoke", action="store_true", help="2 rounds of 50 commits: checks the script works")
    args = parser.parse_args(argv)
    if args.smoke:
        parser.set_defaults(**SMOKE)  # an option given on the command line still wins
        args = parser.parse_args(argv)
    return Options(args.commits, args.rounds, args.workdir, args.smoke)


def time_commits(directory: Path, name: str, synchronous: str, commits: int) -> float:
    """Seconds for ``commits`` one-row transactions in a fresh WAL database."""
    connection = sqlite3.connect(directory / f"{name}.db", isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={synchronous}")
        connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, note TEXT)")
        started = time.perf_counter()
        for _ in range(commits):
            connection.execute("BEGIN")
            connection.execute("INSERT INTO t (note) VALUES (?)", (ROW,))
            connection.execute("COMMIT")
        return time.perf_counter() - started
    finally:
        connection.close()


def measure_round(work: Path, layer: PowerCutMount, synchronous: str, index: int, commits: int) -> Round:
    name = f"{synchronous}-{index}"
    mount_first = index % 2 == 0

    def on_mount() -> tuple[float, int]:
        before = layer.stats()
        seconds = time_commits(layer.mountpoint, name, synchronous, commits)
        return seconds, _writes(layer.stats()) - _writes(before)

    def plain() -> float:
        return time_commits(work / "plain", name, synchronous, commits)
    if mount_first:
        (mount_s, writes), plain_s = on_mount(), plain()
    else:
        plain_s = plain()
        mount_s, writes = on_mount()
    return Round(mount_s, plain_s, writes)


def _writes(stats: dict) -> int:
    """Writes the layer counted: those still pending and those a sync made durable are both in its counters."""
    return stats["writes"]


def report_round(synchronous: str, index: int, commits: int, measured: Round) -> None:
    order = "mount first" if index % 2 == 0 else "plain first"
    print(f"  synchronous={synchronous:<4} round {index + 1}: mount {commits / measured.mount_s:9,.0f} commits/s · "
          f"plain {commits / measured.plain_s:9,.0f} commits/s · time ratio {measured.ratio:.2f} ({order})")


def summarise(synchronous: str, rounds: list[Round], commits: int) -> None:
    ratios = [measured.ratio for measured in rounds]
    print(f"synchronous={synchronous}: time on the mount / without it: median {statistics.median(ratios):.2f} "
          f"over {len(ratios)} rounds (range {min(ratios):.2f}-{max(ratios):.2f})")
    writes = sum(measured.writes for measured in rounds)
    extra_s = sum(measured.mount_s - measured.plain_s for measured in rounds)
    if synchronous == "off":  # without syncs the difference is the layer's own path; with them, the disk's too
        print(f"  pass-through cost: {writes / (len(rounds) * commits):.1f} FUSE writes per commit, "
              f"{extra_s / writes * 1e6:,.0f} µs added per write ({extra_s / (len(rounds) * commits) * 1e6:,.0f} µs "
              f"per commit)")


def main(argv: list[str] | None = None) -> None:
    options = parse_options(argv)
    if options.smoke:
        print(SMOKE_NOTICE)
    if options.workdir:
        options.workdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=PREFIX, dir=options.workdir))
    try:
        for directory in ("backing", "mnt", "plain"):
            (work / directory).mkdir()
        print(f"SQLite WAL, {options.commits:,} one-row commits per measurement, {options.rounds} rounds, in {work}")
        with PowerCutMount(work / "backing", work / "mnt") as layer:
            for synchronous in SETTINGS:
                rounds = [measure_round(work, layer, synchronous, index, options.commits)
                          for index in range(options.rounds)]
                for index, measured in enumerate(rounds):
                    report_round(synchronous, index, options.commits, measured)
                summarise(synchronous, rounds, options.commits)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
