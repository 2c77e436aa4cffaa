"""Several client hosts on Ray against one host and against a run on this machine (issue #45): do N hosts deliver N
times one host's transactions, and does one host on the cluster deliver what a run without Ray does?

Against a database that does almost no work, so that the clients, not the server, set the rate: PostgreSQL's io-random
on a 1 MB table (every read a cached single-row lookup by primary key, which the engine's pump sends for the busy
terminals sharing one process per CPU). Real runs (``maximus.api.run_benchmark``) on a managed server, each round in
turn: the run on this machine with ``--terminals`` terminals, one host of a local Ray cluster with as many, and two
hosts with twice as many.
Per run: transactions per second in the window, the CPUs the clients used in the window (a host's: its terminal
processes', sampled on the host as its records stream back) and the machine's idle share. Then the ratios: one host
against the run without Ray, and N hosts against N times one host, in transactions, and in transactions per client
CPU-second: on one machine the hosts get only the CPU the server and the coordinator leave them, so the second says
whether each host delivers, per CPU it really got, what one host alone does (issue #45: "measure with the CPU the
hosts really get").

The cluster is Ray's own test cluster on this machine (``ray.cluster_utils.Cluster``): a head without CPUs (the
coordinator's, as a database's machine that takes no client) and two nodes of as many CPUs as this machine has. On
one machine the hosts share its cores with the server and the coordinator: the ratio says what the cores allow, not
what separate client machines would give.

Usage (from the repository root, as root: the server runs as the postgres user):

    .venv/bin/python bench/ray_hosts.py [--terminals 2] [--duration 10] [--rounds 3] [--smoke]

--smoke: one round of 1.5-s windows: it checks that the script works, its figures mean nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from maximus import api
from maximus.client_hosts import client_hosts

SMOKE_NOTICE = ("smoke mode: the smallest sizes, to check that the script works end to end; "
                "its figures mean nothing")
PREFIX = "maximus-bench-ray-"  # tests/test_bench.py checks that nothing of this name is left behind
TINY_TABLE = api.Build.of("io-random", {"table_mb": 1})
NODES = 2
# Each node as many CPUs as this machine has, as a client machine of its own would: a host then shares its terminals
# over as many processes as a run on this machine does (a busy terminal's reads are sent by a pump, one process per
# CPU), so that one host and the run without Ray are the same client
NODE_CPUS = os.cpu_count() or 1
OBJECT_STORE_BYTES = 80 << 20  # the least Ray takes


@dataclass(frozen=True)
class Measured:
    mode: str  # "local" or "ray"
    hosts: int
    terminals: int
    per_second: float  # transactions in the window, per second
    client_cpus: float  # CPU-seconds per second of the client processes in the window (the hosts' together)
    idle_percent: float | None  # the machine's, over the window

    @property
    def per_client_cpu(self) -> float:
        """Transactions per CPU-second the clients used."""
        return self.per_second / self.client_cpus if self.client_cpus > 0 else float("nan")


def _run(workdir: Path, address: str | None, hosts: int, terminals: int, warmup: float,
         duration: float) -> Measured:
    results = workdir / "results.db"
    outcome = api.run_benchmark(api.BenchmarkOptions(
        engine="postgres", workload="io-random", settings={"table_mb": 1}, workdir=workdir, results=results,
        terminals=terminals, warmup_s=warmup, duration_s=duration, check=False, device_limit=False,
        ray_address=address, hosts=hosts))
    report = api.report_of_run(results, outcome.run_id)
    assert outcome.status.value == "complete", outcome.result.errors
    monitored = report.monitoring.figures
    cpu = monitored.cpu.idle if monitored.cpu else None
    return Measured("ray" if address else "local", hosts, terminals, report.figures.tpm / 60,
                    _client_cpus(report), cpu)


def _client_cpus(report: Any) -> float:
    """The clients' CPUs in the window: each host's terminal processes (``client host N``, sampled on the host), or,
    where a host's readings do not span the window, every host's over its whole run (its record); on this machine
    alone, its terminal processes (``client``). The parent's is left out, as the coordinator's and the actors' are."""
    groups = report.monitoring.figures.groups
    hosts = [figures.cpus for name, figures in groups.items() if name.startswith("client host ")]
    on_hosts = client_hosts(report.record.environment)
    if on_hosts and len(hosts) < len(on_hosts):  # a window too short for a host's readings at both its edges
        return sum(host.client_cpu_s / host.elapsed_s for host in on_hosts)  # each host's over its whole run
    if on_hosts:
        return sum(hosts)
    return groups["client"].cpus if "client" in groups else 0.0


def _print(round_: int, measured: Measured) -> None:
    idle = "-" if measured.idle_percent is None else f"{measured.idle_percent:.0f} %"
    print(f"  {round_:<5}  {measured.mode:<5}  {measured.hosts:>5}  {measured.terminals:>9}  "
          f"{measured.per_second:>10,.1f}  {measured.client_cpus:>11.2f}  {measured.per_client_cpu:>14,.0f}  "
          f"{idle:>12}", flush=True)


@contextmanager
def _cluster(temp: Path) -> Iterator[str]:
    """A head without CPUs and ``NODES`` nodes of ``NODE_CPUS`` each on this machine, its files in ``temp``; stopped
    after."""
    import ray
    from ray.cluster_utils import Cluster

    os.environ["RAY_TMPDIR"] = str(temp)  # its sessions and its address file, else in /tmp/ray
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                            "object_store_memory": OBJECT_STORE_BYTES})
    try:
        for _ in range(NODES):
            cluster.add_node(num_cpus=NODE_CPUS, object_store_memory=OBJECT_STORE_BYTES)
        yield cluster.address
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--terminals", type=int, default=2, help="terminals a host (and of the run on this machine)")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    options = parser.parse_args()
    if options.smoke:
        print(SMOKE_NOTICE)
        options.duration, options.rounds = 1.5, 1
    workdir = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/var/tmp"))  # the server's user must reach it
    workdir.chmod(0o755)
    temp = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/tmp"))  # short: Ray's socket paths must stay short
    try:
        engine = api.make_engine("postgres", workdir, TINY_TABLE, {})
        with api.running(engine):
            api.load_database(engine, TINY_TABLE, seed=1)
        with _cluster(temp) as address:
            _bench(workdir, address, options)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(temp, ignore_errors=True)


def _bench(workdir: Path, address: str, options: argparse.Namespace) -> None:
    terminals, warmup = options.terminals, 0.5 if options.smoke else 2.0
    print(f"Client hosts on a local Ray cluster ({NODES} nodes of {NODE_CPUS} CPUs each, {os.cpu_count()} cores in "
          f"all), PostgreSQL io-random on a 1 MB table, {terminals} terminals a host, {options.duration:g}-s windows, "
          f"{options.rounds} round(s), in {workdir}")
    print("  round  mode   hosts  terminals       txn/s  client CPUs  txn/client CPU  machine idle")
    ratios_one, ratios_all, per_cpu_all = [], [], []
    for round_ in range(1, options.rounds + 1):
        plan = [(None, 1, terminals), (address, 1, terminals), (address, NODES, NODES * terminals)]
        done = {(address_, hosts): _run(workdir, address_, hosts, count, warmup, options.duration)
                for address_, hosts, count in (plan if round_ % 2 else plan[::-1])}  # drift spread over the modes
        for key in ((None, 1), (address, 1), (address, NODES)):
            _print(round_, done[key])
        one = done[address, 1].per_second
        ratios_one.append(one / done[None, 1].per_second)
        ratios_all.append(done[address, NODES].per_second / (NODES * one))
        per_cpu_all.append(done[address, NODES].per_client_cpu / done[address, 1].per_client_cpu)
    _conclude(ratios_one, ratios_all, per_cpu_all)


def _conclude(ratios_one: list[float], ratios_all: list[float], per_cpu_all: list[float]) -> None:
    rounds = len(ratios_all)
    print(f"  ratio --hosts 1 / this machine alone: median {statistics.median(ratios_one):.2f} of {rounds} round(s) "
          f"(range {min(ratios_one):.2f}-{max(ratios_one):.2f})")
    scaled = statistics.median(ratios_all)
    print(f"  ratio {NODES} hosts / ({NODES} x one host): median {scaled:.2f} of {rounds} round(s) (range "
          f"{min(ratios_all):.2f}-{max(ratios_all):.2f}); the target (>= 0.9) is "
          f"{'met' if scaled >= 0.9 else 'missed'} in transactions")
    per_cpu = statistics.median(per_cpu_all)
    print(f"  per client CPU-second, {NODES} hosts / one host: median {per_cpu:.2f} (range {min(per_cpu_all):.2f}-"
          f"{max(per_cpu_all):.2f}); with the CPU the hosts really got, the target (>= 0.9) is "
          f"{'met' if per_cpu >= 0.9 else 'missed'}")
    print(f"  on this machine the {NODES} hosts, the coordinator and the server share its {os.cpu_count()} cores: "
          "the ratio is what the cores allow; separate client machines each bring their own")


if __name__ == "__main__":
    main()
