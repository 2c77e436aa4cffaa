"""Client memory with many keyed terminals: 1,000 terminals with keying and think times on PostgreSQL.

Terminals run as asynchronous sessions, one worker process per core. The benchmark samples the resident
memory (RSS) of every Maximus process (parent, terminal and deferred workers) once a second during the
run, and prints the peak, the per-terminal share, and the throughput against the TPC-C ceiling of
12.86 tpmC per 10 keyed terminals. Usage:

    .venv/bin/python bench/postgres_terminals_memory.py [--terminals 1000] [--warehouses 10] [--duration 60] [--smoke]

Warehouses do not change the client's memory; the spec's 10 terminals per warehouse (4.2.2) would need
100 warehouses for 1,000 terminals (pass --warehouses 100 for that, a build of several minutes); with
fewer, terminals share home warehouses.

--smoke runs 10 terminals on 1 warehouse for 1 s of warm-up and 2 s measured, in seconds: it checks that the script
still works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from maximus import api

SMOKE_NOTICE = ("smoke mode: the smallest sizes and shortest runs, to check that the script works end to end; "
                "its figures mean nothing")
WARMUP_S = 5.0
# --smoke's sizes, unless given: terminals enough for two worker processes on two cores
SMOKE = {"terminals": 10, "warehouses": 1, "duration": 2.0, "warmup": 1.0}


class MemoryWatch:
    """The driver's observer: sums RSS over this process and all its descendants at every tick."""

    def __init__(self) -> None:
        self.peak_kib = 0
        self.processes = 0

    def started(self, warmup_s: float, duration_s: float, headline: object) -> None:
        pass

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None:
        pids = _descendants(os.getpid()) | {os.getpid()}
        self.processes = max(self.processes, len(pids))
        self.peak_kib = max(self.peak_kib, sum(_rss_kib(pid) for pid in pids))


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, frontier = set(), [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return {pid for pid in found if "python" in _name(pid)}


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except OSError:
        return ""


def _rss_kib(pid: int) -> int:
    try:
        line = next(l for l in Path(f"/proc/{pid}/status").read_text().splitlines() if l.startswith("VmRSS"))
    except (OSError, StopIteration):
        return 0
    return int(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=1000)
    parser.add_argument("--warehouses", type=int, default=10)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--smoke", action="store_true",
                        help="10 terminals, 1 warehouse, 2 s measured: checks that the script works")
    parser.set_defaults(warmup=WARMUP_S)
    options = parser.parse_args()
    if options.smoke:
        parser.set_defaults(**SMOKE)  # an option given on the command line still wins
        options = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="maximus-bench-memory-", dir="/var/tmp"))
    workdir.chmod(0o755)
    if options.smoke:
        print(SMOKE_NOTICE)
    try:
        run(options, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run(options: argparse.Namespace, workdir: Path) -> None:
    watch = MemoryWatch()
    run_options = api.BenchmarkOptions(engine="postgres", settings={"warehouses": options.warehouses, "keying": True},
                                       terminals=options.terminals, warmup_s=options.warmup,
                                       duration_s=options.duration, transactions="server", workdir=workdir,
                                       results=workdir / "results.db", check=False, monitor=False)
    outcome = api.run_benchmark(run_options, watch)
    store = api.open_results(workdir / "results.db")
    figures = api.analyse_run(store, outcome.run_id).figures
    store.close()
    engine = api.make_engine("postgres", workdir, api.Build.of("tpcc", {"warehouses": options.warehouses}), {})
    _, per_process = api.terminal_hosting(engine, _server_side(), options.terminals)
    ceiling = 12.86 * options.terminals / 10
    print(f"{options.terminals} keyed terminals (keying + think times of 5.2.5), {options.warehouses} warehouses, "
          f"{options.duration:g} s measured; {per_process} terminals per worker process")
    print(f"  status {outcome.status.value}; failed transactions {figures.outcomes['failed']}")
    print(f"  peak client RSS: {watch.peak_kib / 1024:,.0f} MiB over {watch.processes} Maximus processes "
          f"= {watch.peak_kib / options.terminals:,.0f} KiB per terminal")
    print(f"  tpmC {figures.headline:,} against the keyed ceiling of {ceiling:,.0f} (12.86 per 10 terminals, 4.1.3); "
          "a short run is not yet steady, since all terminals start keying at once")


def _server_side():
    from maximus.workloads.tpcc.emulator import TpccRunSettings
    from maximus.workloads.tpcc.random import NURandConstants

    return TpccRunSettings(1, 1, NURandConstants(0, 0, 0), keying_and_think=True, server_side=True)


if __name__ == "__main__":
    main()
