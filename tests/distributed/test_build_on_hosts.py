"""A run's database build split over its client hosts (issue #45), against managed PostgreSQL and MariaDB servers:
each host loads its own warehouses, the coordinator the rest, and the build holds what a build on one machine holds,
row for row, whether a host loads with one loader process or several; each host's load time is stored and shown
with the run; a host that fails ends the build in one line naming it, and a Ctrl-C ends every host's loader processes:
either leaves nothing of the build behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pytest

from maximus import api
from maximus.client_hosts import client_hosts
from maximus.database import check_running
from maximus.driver.hosts import cluster
from maximus.engines import _process
from maximus.errors import EngineError
from maximus.records import RunStatus
from maximus.workloads.base import Homes, LoadResult, Progress, SplitLoad
from maximus.workloads.tpcc import Tpcc
from maximus.workloads.tpcc.loader import WarehouseLoad

from interrupting import keyboard_interrupts, remove_semaphores  # tests/interrupting.py
from tpcc_modes import mariadb_contents, postgres_contents  # tests/tpcc_modes.py

WAREHOUSES = 2
TWO_WAREHOUSES = api.Build.of("tpcc", {"warehouses": WAREHOUSES})
ALL_PASS_FRESH = {n: True for n in range(1, 13)}
INJECTED = "a loader process failed: ValueError: injected"


def _options(address: str, workdir: Path, results: Path, database: str) -> api.BenchmarkOptions:
    return api.BenchmarkOptions(engine="postgres", settings={"warehouses": WAREHOUSES}, workdir=workdir,
                                results=results, database=database, terminals=2, warmup_s=0.5, duration_s=1.0,
                                ray_address=address, hosts=2, device_limit=False)


def _pristine_contents(workdir: Path, database: str | None = None) -> tuple[dict[str, str], list[Any]]:
    """The digests of a build's pristine copy (restored as the working copy) and its consistency, fresh."""
    engine = api.make_engine("postgres", workdir, TWO_WAREHOUSES, {}, database)
    with api.running(engine):
        engine.restore()
        session = engine.connect()
        try:
            contents = postgres_contents(session)
        finally:
            session.close()
        return contents, check_running(engine, TWO_WAREHOUSES.workload, True)


class _Rows:
    """A build's progress as told: the rows per table."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.finished = False

    def start(self, expected_rows: Any) -> None:
        self.rows = {}

    def advance(self, table: str, rows: int) -> None:
        self.rows[table] = self.rows.get(table, 0) + rows

    def finish(self) -> None:
        self.finished = True


@dataclass(frozen=True)
class HostsBuild:
    outcome: api.RunOutcome
    results: Path
    database: str
    progress: _Rows


@pytest.fixture(scope="module")
def hosts_build(ray_cluster: str, two_warehouses: Path, tmp_path_factory: pytest.TempPathFactory) -> HostsBuild:
    """A run from 2 hosts that builds its database (one of its own name, beside the local build of the same
    cluster) first."""
    results = tmp_path_factory.mktemp("hosts-build") / "r.db"
    database = "tpcc-2wh-on-hosts"
    progress = _Rows()
    outcome = api.run_benchmark(_options(ray_cluster, two_warehouses, results, database), progress=progress)
    return HostsBuild(outcome, results, database, progress)


@pytest.fixture(scope="module")
def local_build(two_warehouses: Path) -> tuple[dict[str, str], list[Any]]:
    """The contents and consistency of the build on one machine, which every build on the hosts must equal."""
    return _pristine_contents(two_warehouses)


def test_a_build_on_two_hosts_holds_what_a_build_on_one_machine_holds(hosts_build: HostsBuild, two_warehouses: Path,
                                                                      local_build: tuple[dict[str, str], list[Any]]
                                                                      ) -> None:
    assert hosts_build.outcome.status is RunStatus.COMPLETE, hosts_build.outcome.result.errors
    local, local_checks = local_build
    on_hosts, hosts_checks = _pristine_contents(two_warehouses, hosts_build.database)
    assert on_hosts == local  # every table's digest (its rows but the build's dates), row counts in them
    assert {r.condition: r.passed for r in hosts_checks} == {r.condition: r.passed for r in local_checks} \
        == ALL_PASS_FRESH


def test_the_build_progress_counts_every_row_the_hosts_wrote(hosts_build: HostsBuild, two_warehouses: Path) -> None:
    engine = api.make_engine("postgres", two_warehouses, TWO_WAREHOUSES, {}, hosts_build.database)
    with api.running(engine):
        engine.restore()
        session = engine.connect()
        try:
            built = {table: session.fetchone(f"SELECT count(*) FROM {table}")[0] for table in hosts_build.progress.rows}
        finally:
            session.close()
    assert hosts_build.progress.finished
    assert set(built) == set(TWO_WAREHOUSES.workload.expected_rows(TWO_WAREHOUSES.settings))
    assert hosts_build.progress.rows == built


def test_the_build_time_and_each_host_load_time_are_stored_and_shown(hosts_build: HostsBuild, tmp_path: Path) -> None:
    record = api.open_results(hosts_build.results).run(hosts_build.outcome.run_id)
    assert record.loaded_in_run and record.load_seconds is not None
    first, second = client_hosts(record.environment)
    assert (first.homes, second.homes) == ((1,), (2,))  # each loaded the warehouse its terminals then ran
    for host in (first, second):
        assert host.load_s is not None and 0 < host.load_s < record.load_seconds
    shown = subprocess.run([sys.executable, "-m", "maximus", "show", str(record.id), "--results",
                            str(hosts_build.results)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout.split("Client hosts", 1)[1]
    header = next(line for line in table.splitlines() if "Host" in line and "Address" in line)
    assert "Load s" in header
    rows = [" ".join(line.replace("│", " ").split()) for line in table.splitlines() if "│" in line][:2]
    assert rows[0].startswith(f"1 {first.address} 1 0 1 {first.load_s:.1f} ")
    assert rows[1].startswith(f"2 {second.address} 1 1 2 {second.load_s:.1f} ")


def test_a_mariadb_build_on_two_hosts_holds_what_a_build_on_one_machine_holds(ray_cluster: str,
                                                                              server_workdir: Path) -> None:
    """Built by ``maximus load --ray`` (``api.load``), as a DBA builds a database once for the runs that follow."""
    contents = {}
    for database in (None, "tpcc-2wh-on-hosts"):
        loaded = api.load(api.BenchmarkOptions(engine="mariadb", settings={"warehouses": WAREHOUSES},
                                               workdir=server_workdir, database=database, device_limit=False,
                                               ray_address=ray_cluster if database else None,
                                               hosts=2 if database else 1))
        assert len(loaded.host_load_s) == (2 if database else 0)
        engine = api.make_engine("mariadb", server_workdir, TWO_WAREHOUSES, {}, database)
        with api.running(engine):
            engine.restore()
            session = engine.connect()
            try:
                contents[database] = mariadb_contents(session)
            finally:
                session.close()
            checks = check_running(engine, TWO_WAREHOUSES.workload, True)
            assert {r.condition: r.passed for r in checks} == ALL_PASS_FRESH
    assert contents["tpcc-2wh-on-hosts"] == contents[None]  # every table's row count and the sum of its rows' hashes


@dataclass(frozen=True)
class _TpccBuild(SplitLoad):
    """TPC-C's build as it is, for a test to change what a host does."""

    build: WarehouseLoad

    @property
    def homes(self) -> Homes:
        return self.build.homes

    def begin(self) -> None:
        self.build.begin()

    def load_shared(self, progress: Progress) -> None:
        self.build.load_shared(progress)

    def load_homes(self, homes: Sequence[int], processes: int, progress: Progress) -> None:
        self.build.load_homes(homes, processes, progress)

    def finish(self, rows: Any) -> LoadResult:
        return self.build.finish(rows)


@dataclass(frozen=True)
class _FailingHome(_TpccBuild):
    """TPC-C's build, whose host that loads ``home`` fails once it has written it, as a loader process that failed
    would (a cause the engine does not explain: it goes on in its own words)."""

    home: int

    def load_homes(self, homes: Sequence[int], processes: int, progress: Progress) -> None:
        self.build.load_homes(homes, processes, progress)
        if self.home in homes:
            raise EngineError(INJECTED)


def test_a_host_that_fails_to_load_fails_the_build_in_one_line_and_leaves_nothing(
        ray_cluster: str, two_warehouses: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the hosts import this module from nowhere
    monkeypatch.setattr(Tpcc, "split_load", lambda self, engine, settings, seed:
                        _FailingHome(WarehouseLoad.of(engine, settings.warehouses, seed), home=2))
    database = "tpcc-2wh-failing"
    with pytest.raises(EngineError) as failed:
        api.run_benchmark(_options(ray_cluster, two_warehouses, tmp_path / "r.db", database))
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith("host 2 (") and ") failed to load warehouses 2: " in message, message
    assert message.endswith(f": {INJECTED}"), message
    engine = api.make_engine("postgres", two_warehouses, TWO_WAREHOUSES, {}, database)
    with api.running(engine):
        assert not engine.has_snapshot() and not engine.exists()  # the half-loaded database is dropped: no later run
        # takes it


def _two_loaders_a_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each node with a CPU counted as two, so that a host given both warehouses loads them with two loader processes
    (the test cluster's nodes have one CPU each, and a host loads with one process per CPU of its node)."""
    counted = cluster.node_cpus
    monkeypatch.setattr(cluster, "node_cpus", lambda ray: {node: 2.0 if cpus else 0.0
                                                          for node, cpus in counted(ray).items()})


def _loaded_on_one_host(address: str, workdir: Path, database: str) -> api.Loaded:
    return api.load(api.BenchmarkOptions(engine="postgres", settings={"warehouses": WAREHOUSES}, workdir=workdir,
                                         database=database, device_limit=False, ray_address=address, hosts=1))


def test_a_host_loading_with_two_loader_processes_builds_what_one_machine_builds(
        ray_cluster: str, two_warehouses: Path, local_build: tuple[dict[str, str], list[Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _two_loaders_a_host(monkeypatch)
    database = "tpcc-2wh-two-loaders"
    loaded = _loaded_on_one_host(ray_cluster, two_warehouses, database)
    assert len(loaded.host_load_s) == 1
    on_host, host_checks = _pristine_contents(two_warehouses, database)
    assert on_host == local_build[0]  # every table's digest
    assert {r.condition: r.passed for r in host_checks} == ALL_PASS_FRESH


@dataclass(frozen=True)
class _InterruptedHome(_TpccBuild):
    """TPC-C's build, whose host, once its loader processes have written their first rows, writes its own pid and its
    processes' to ``pids`` (a line), and the shared memory they map (another: the loaders' queue's named semaphores,
    which a killed host leaves for the test to remove), and has the coordinator interrupted, as a Ctrl-C at its
    terminal would; and goes on loading."""

    coordinator: int
    pids: Path

    def load_homes(self, homes: Sequence[int], processes: int, progress: Progress) -> None:
        def told(table: str, rows: int) -> None:
            progress(table, rows)
            if not self.pids.exists():
                mine = [os.getpid(), *_process.descendants(os.getpid())]
                mapped = _process.shared_memory(mine)[0]
                self.pids.write_text(" ".join(map(str, mine)) + "\n" + " ".join(map(str, mapped)))
                os.kill(self.coordinator, signal.SIGINT)

        self.build.load_homes(homes, processes, told)


def test_a_ctrl_c_during_a_build_on_the_hosts_ends_their_loader_processes_and_leaves_nothing(
        ray_cluster: str, two_warehouses: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the hosts import this module from nowhere
    _two_loaders_a_host(monkeypatch)
    pids = tmp_path / "host-pids"
    monkeypatch.setattr(Tpcc, "split_load", lambda self, engine, settings, seed:
                        _InterruptedHome(WarehouseLoad.of(engine, settings.warehouses, seed), os.getpid(), pids))
    database = "tpcc-2wh-interrupted"
    try:
        with keyboard_interrupts(), pytest.raises(KeyboardInterrupt):
            _loaded_on_one_host(ray_cluster, two_warehouses, database)
        processes = pids.read_text().split("\n")[0]
        host = [int(pid) for pid in processes.split()]
        assert len(host) >= 3, host  # the host's actor, and its two loader processes (and their fork server)
        _process.await_ended(host, 15)
        left = [pid for pid in host if _process.alive(pid)]
    finally:  # the host's, which its killed processes left
        noted = pids.read_text().split("\n") if pids.exists() else []
        remove_semaphores({int(inode) for inode in noted[1].split()} if len(noted) > 1 else set())
    assert not left, f"the host's processes outlived the Ctrl-C: {left}"  # none goes on writing into the build
    engine = api.make_engine("postgres", two_warehouses, TWO_WAREHOUSES, {}, database)
    with api.running(engine):
        assert not engine.has_snapshot() and not engine.exists()
