"""Storage-bound workloads against the device, side by side in one run (issue #43): each engine's ``io-random`` reads/s
at 1, 4 and 16 clients against fio's matching job (a synchronous job per client, the engine's page, buffered or direct
as it reads), and ``io-scan``'s MB/s against fio's sequential read; with the CPU each read costs the database and the
client, which is what holds a database below the device, and the read system calls each cost them (``syscr``).

Every figure is a real run's (``maximus.api.run``): fio runs before each run on the same file system, in the same
memory cgroup as the database's processes (``server.memory``, SQLite's ``client.memory``), and the run's
``DeviceComparison`` gives the ratio. The caches are bounded so that the table is several times larger than every
cache in the way: the engine's buffer cache set small, the OS page cache of its processes held by a memory cgroup
(MariaDB reads with O_DIRECT: its buffer pool is the only cache).

Usage (as root: the memory limits are cgroups; from the repository root):

    .venv/bin/python bench/io_vs_fio.py [--table-mb 512] [--duration 15] [--engines sqlite,postgres,mariadb]
                                        [--quick] [--smoke]

--quick: a 256 MB table, 8 s runs. --smoke: the smallest sizes, SQLite only, to check that the script works end to
end; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from maximus import api

SMOKE_NOTICE = ("smoke mode: the smallest sizes, to check that the script works end to end; "
                "its figures mean nothing")
PREFIX = "maximus-bench-io-"  # tests/test_bench.py checks that nothing of this name is left behind
CLIENTS = (1, 4, 16)


@dataclass(frozen=True)
class Setup:
    """An engine with its caches bounded: its own knobs, and the memory its processes may keep (the OS page cache
    included), which grows with the clients so that their own memory (a Python terminal holds about 40 MB, a
    PostgreSQL backend about 10 MB) does not eat the cache or bring the OOM killer."""

    engine: str
    knobs: dict[str, str]
    memory_knob: str = ""
    memory_base_mb: int = 0
    memory_per_client_mb: int = 0

    def knobs_for(self, clients: int) -> dict[str, str]:
        if not self.memory_knob:
            return dict(self.knobs)
        memory = self.memory_base_mb + self.memory_per_client_mb * clients
        return {**self.knobs, self.memory_knob: f"{memory}MB"}


SETUPS = {
    # client.memory holds Maximus's own process too (its loader keeps about 130 MB) and every terminal process
    "sqlite": Setup("sqlite", {"cache_size": "-2048"}, "client.memory", 224, 48),
    "postgres": Setup("postgres", {"shared_buffers": "16MB", "max_parallel_workers_per_gather": "2"},
                      "server.memory", 112, 12),
    "mariadb": Setup("mariadb", {"innodb_buffer_pool_size": "32M"}),  # O_DIRECT: its buffer pool is its only cache
}


def run_one(setup: Setup, workload: str, clients: int, table_mb: int, duration: float, base: Path,
            **settings: str) -> api.RunReport:
    options = api.BenchmarkOptions(engine=setup.engine, knobs=setup.knobs_for(clients), workload=workload,
                                   settings={"table_mb": table_mb, **settings}, terminals=clients, warmup_s=2.0,
                                   duration_s=duration, workdir=base / setup.engine, results=base / "results.db",
                                   system_changes=True)
    outcome = api.run(options)
    store = api.open_results(options.results)
    try:
        return api.analyse_run(store, outcome.run_id)
    finally:
        store.close()


def _operations_per_s(report: api.RunReport) -> float:
    """The run's reads (io-random) or scans (io-scan) a second in the window."""
    if report.device and report.device.unit == "reads/s":
        return report.device.database.mean
    return report.figures.headline / report.presentation.headline.per_seconds


def cpu_per_read_us(report: api.RunReport) -> str:
    """CPU microseconds each completed transaction cost the server's processes and the client's, in the window."""
    groups, per_second = report.monitoring.figures.groups, _operations_per_s(report)
    if not per_second:
        return "-"
    parts = [f"{name} {group.cpus / per_second * 1e6:,.0f}" for name, group in sorted(groups.items())
             if name in ("server", "client")]
    return ", ".join(parts) or "-"


def read_calls_per_op(report: api.RunReport) -> str:
    """Read system calls each operation cost the server's processes and the client's (/proc/PID/io's syscr): a
    page a call is one per read; more shows the engine reading around it, fewer a cache between."""
    groups, per_second = report.monitoring.figures.groups, _operations_per_s(report)
    parts = [f"{name} {group.read_calls_per_s / per_second:,.1f}" for name, group in sorted(groups.items())
             if name in ("server", "client") and group.read_calls_per_s is not None and per_second]
    return ", ".join(parts) or "-"


def line(setup: Setup, workload: str, clients: int, report: api.RunReport) -> str:
    device = report.device
    if device is None:
        return f"  {setup.engine:<9} {workload:<13} {clients:>3}  no device limit stored"
    interval = f"{device.ratio.low:.2f}-{device.ratio.high:.2f}" if device.ratio.n > 1 else "one batch"
    return (f"  {setup.engine:<9} {workload:<13} {clients:>3}  {device.database.mean:>11,.1f} {device.device:>11,.1f} "
            f"{device.unit:<8} ratio {device.ratio.mean:.2f} ({interval})  {device.verdict:<12} "
            f"CPU us/op: {cpu_per_read_us(report)}; read calls/op: {read_calls_per_op(report)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table-mb", type=int, default=512)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--engines", default="sqlite,postgres,mariadb")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--scans-only", action="store_true", help="io-scan's runs only, cold and warm")
    args = parser.parse_args()
    table_mb, duration, engines, clients = args.table_mb, args.duration, args.engines.split(","), CLIENTS
    if args.quick:
        table_mb, duration = 256, 8.0
    if args.smoke:
        print(SMOKE_NOTICE)
        table_mb, duration, engines, clients = 8, 1.0, ["sqlite"], (1,)
    base = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/var/tmp"))
    base.chmod(0o755)
    try:
        print(f"Storage-bound runs against fio, a {table_mb} MB table, {duration:g} s each, in {base}")
        print(f"  {'engine':<9} {'workload':<13} {'cl':>3}  {'database':>11} {'fio':>11} unit")
        for engine in engines:
            setup = SETUPS[engine]
            for count in () if args.scans_only else clients:
                print(line(setup, "io-random", count, run_one(setup, "io-random", count, table_mb, duration, base)),
                      flush=True)
            scanners = 1 if args.smoke else 2
            for caches in ("cold", "warm"):  # the device's scans, and what the bounded cache makes of them
                print(line(setup, f"io-scan {caches}", scanners,
                           run_one(setup, "io-scan", scanners, table_mb, duration, base, caches=caches)), flush=True)
        print("Targets: io-random at 16 clients and io-scan (cold) at least 0.8 of fio (device-bound).")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
