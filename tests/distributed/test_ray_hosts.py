"""Runs from several client hosts, the nodes of a Ray cluster on this machine, against a managed PostgreSQL server
(issue #45): each host runs the terminals of its own warehouses, the merged run is the union of theirs, the breakdown
is stored and shown, the clocks agree within their bounds, one host gives the record of a run on one machine,
Ctrl-C stops every host, and a lost host fails the run, which keeps what the host streamed before. Short runs: a
0.5-s warm-up and windows of 2-3 s."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from maximus import api
from maximus.analysis.metrics import run_figures
from maximus.client_hosts import CLIENT_HOSTS, HOST_CPU_SECONDS, client_hosts
from maximus.driver import hosts
from maximus.driver.hosts import cluster
from maximus.engines import _process
from maximus.errors import EngineError, UserError
from maximus.records import RunStatus
from maximus.workloads.tpcc.transaction import home_of

from interrupting import keyboard_interrupts, remove_semaphores  # tests/interrupting.py

WAREHOUSES = 2
TWO_WAREHOUSES = api.Build.of("tpcc", {"warehouses": WAREHOUSES})
BOUND_LIMIT_S = 0.005  # issue #45: the clock offset's bound on one machine


@dataclass(frozen=True)
class HostsRun:
    outcome: api.RunOutcome
    on_hosts: hosts.HostsResult  # what the coordinator handed back, each host's own run in it
    results: Path


def _options(address: str | None, workdir: Path, results: Path, **rest: Any) -> api.BenchmarkOptions:
    return api.BenchmarkOptions(engine="postgres", settings={"warehouses": WAREHOUSES}, workdir=workdir,
                                results=results, warmup_s=0.5, ray_address=address, **rest)


@pytest.fixture(scope="module")
def two_hosts(ray_cluster: str, two_warehouses: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostsRun]:
    """One run of 4 terminals from 2 hosts, with the coordinator's result kept beside what was stored."""
    results = tmp_path_factory.mktemp("two-hosts") / "r.db"
    kept: list[hosts.HostsResult] = []
    drive_on_hosts = hosts.drive_on_hosts

    def keeping(*args: Any, **named: Any) -> hosts.HostsResult:
        kept.append(drive_on_hosts(*args, **named))
        return kept[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hosts, "drive_on_hosts", keeping)
        outcome = api.run_benchmark(_options(ray_cluster, two_warehouses, results, terminals=4, duration_s=2.5,
                                             hosts=2))
    yield HostsRun(outcome, kept[0], results)


def test_two_hosts_run_every_terminal_each_on_its_own_warehouses(two_hosts: HostsRun) -> None:
    outcome, on_hosts = two_hosts.outcome, two_hosts.on_hosts
    assert outcome.status is RunStatus.COMPLETE, outcome.result.errors
    assert {sample.terminal for sample in outcome.result.samples} == {0, 1, 2, 3}
    first, second = on_hosts.hosts
    assert (first.terminals, first.homes, second.terminals, second.homes) == ((0, 2), (1,), (1, 3), (2,))
    assert first.node != second.node  # STRICT_SPREAD: a node each
    for record, own in zip(on_hosts.hosts, on_hosts.runs):
        assert own.status is RunStatus.COMPLETE
        assert {sample.terminal for sample in own.samples} == set(record.terminals)
        assert {home_of(sample.terminal, WAREHOUSES).w_id for sample in own.samples} == set(record.homes)
        assert record.transactions > 0 and record.client_cpu_s > 0 and record.cpus == 1.0
        assert record.niceness == 0  # as the terminals of one machine, not at the 15 Ray gives its workers


def test_a_run_from_two_hosts_passes_every_consistency_condition(two_hosts: HostsRun) -> None:
    assert {r.condition: r.passed for r in two_hosts.outcome.consistency} == {**{n: True for n in range(1, 13)},
                                                                               11: None}


def test_the_stored_run_is_the_union_of_the_hosts_runs_and_its_percentiles_theirs(two_hosts: HostsRun) -> None:
    own_runs, report = two_hosts.on_hosts.runs, api.report_of_run(two_hosts.results, two_hosts.outcome.run_id)
    union = sorted((sample for own in own_runs for sample in own.samples), key=lambda sample: sample.start)
    stored = api.open_results(two_hosts.results).samples(two_hosts.outcome.run_id)
    assert sorted(stored, key=repr) == sorted(union, key=repr)
    reading = report.record.reading
    assert reading is not None
    assert report.figures == run_figures(union, report.record.window, reading.reported_transactions,
                                         reading.headline.transaction, reading.headline.per_seconds)
    assert report.record.window == two_hosts.on_hosts.result.window


def test_the_breakdown_is_stored_and_shown(two_hosts: HostsRun, tmp_path: Path) -> None:
    record = api.open_results(two_hosts.results).run(two_hosts.outcome.run_id)
    assert client_hosts(record.environment) == two_hosts.on_hosts.hosts
    first, second = two_hosts.on_hosts.hosts
    shown = _maximus("show", str(record.id), "--results", str(two_hosts.results), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout.split("Client hosts", 1)[1].split("Monitoring", 1)[0]
    rows = [" ".join(line.replace("│", " ").split()) for line in table.splitlines() if "│" in line]
    assert rows[0].startswith(f"1 {first.address} 1 0, 2 1 ") and rows[1].startswith(f"2 {second.address} 1 1, 3 2 ")
    page = tmp_path / "run.html"
    written = _maximus("report", "--run", str(record.id), "-o", str(page), "--results", str(two_hosts.results),
                       cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert "<h3>Client hosts</h3>" in page.read_text() and "Machine idle</th>" in page.read_text()


def test_each_hosts_client_processes_are_sampled_through_the_run(two_hosts: HostsRun, tmp_path: Path) -> None:
    """Each host's terminal processes' CPU, read as it streams (about twice a second), is stored as the OS sampler's
    process group ``client host N``, in the window too, and shown with the server's; so is its machine's CPU, whose
    idle share the hosts' table shows."""
    samples = api.open_results(two_hosts.results).metric_samples(two_hosts.outcome.run_id)
    window = two_hosts.outcome.result.window
    for number in (1, 2):
        cpu = sorted((sample.time, sample.value) for sample in samples
                     if sample.name == "process_cpu_seconds_total"
                     and sample.labels == {"group": f"client host {number}", "mode": "user"})
        assert len(cpu) >= 4 and cpu[0][0] <= window.start and cpu[-1][0] >= window.end
        assert all(earlier[1] <= later[1] for earlier, later in zip(cpu, cpu[1:]))  # a counter
        idle = [sample.value for sample in samples if sample.name == HOST_CPU_SECONDS
                and sample.labels == {"group": f"client host {number}", "mode": "idle"}]
        assert len(idle) >= 4 and idle == sorted(idle)  # the host's machine, a counter too
    figures = api.report_of_run(two_hosts.results, two_hosts.outcome.run_id).monitoring.figures
    assert figures.groups["client host 1"].cpus > 0 and figures.groups["client host 2"].processes >= 1
    assert sorted(figures.hosts_cpu) == ["client host 1", "client host 2"]
    assert all(0 <= cpu.idle <= 100 and cpu.busy_cpus > 0 for cpu in figures.hosts_cpu.values())
    shown = _maximus("show", str(two_hosts.outcome.run_id), "--results", str(two_hosts.results), cwd=tmp_path)
    assert "client host 2" in shown.stdout
    idle = re.search(r"^Client hosts' machines in the window: client host 1 idle (\d+) % · client host 2 idle (\d+) %$",
                     shown.stdout, re.M)
    assert idle and all(0 <= int(share) <= 100 for share in idle.groups()), shown.stdout


def test_each_host_clock_offset_lies_within_its_bound(two_hosts: HostsRun) -> None:
    """One machine has one clock: the offset measured is 0 within the bound it gives, and the bound within 5 ms."""
    for host in two_hosts.on_hosts.hosts:
        for reading in (host.clock_before, host.clock_after):
            assert reading is not None
            assert abs(reading.offset_s) <= reading.bound_s <= BOUND_LIMIT_S
        assert host.late_start_s == 0.0  # the release reached it before the agreed start
    # no warning of a host's clock, start or priority; its machine, which the server shares here, may well be busy
    assert not [warning for warning in api.report_of_run(two_hosts.results, two_hosts.outcome.run_id).warnings
                if warning.startswith("host ") and ": its machine was " not in warning]


def test_one_host_on_the_cluster_gives_the_record_of_a_run_on_this_machine(ray_cluster: str, two_warehouses: Path,
                                                                           tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    common = ["run", "-e", "postgres", "-w", str(WAREHOUSES), "-t", "2", "--warmup", "0.5", "-d", "2",
              "--workdir", str(two_warehouses), "--results", str(results)]
    for extra in ([], ["--ray", ray_cluster, "--hosts", "1"]):
        done = _maximus(*common, *extra, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "Client hosts" in done.stdout  # the run's own output shows its host
    store = api.open_results(results)
    local, hosted = store.run(1), store.run(2)
    assert (local.status, hosted.status) == (RunStatus.COMPLETE, RunStatus.COMPLETE)
    assert local.spec == hosted.spec
    assert set(hosted.environment) == set(local.environment) | {CLIENT_HOSTS}
    assert [host.terminals for host in client_hosts(hosted.environment)] == [(0, 1)]
    for run in (local, hosted):
        assert {sample.terminal for sample in store.samples(run.id)} == {0, 1}
    assert {s.transaction for s in store.samples(1)} == {s.transaction for s in store.samples(2)}
    assert set(store.facts(1)) == set(store.facts(2))
    assert {s.source for s in store.metric_samples(1)} == {s.source for s in store.metric_samples(2)}
    assert [c.condition for c in store.consistency(1)] == [c.condition for c in store.consistency(2)]


def test_a_fixed_rate_run_from_two_hosts_keeps_each_hosts_schedule_lag(ray_cluster: str, two_warehouses: Path,
                                                                         tmp_path: Path) -> None:
    """Each terminal keeps its own share of the schedule on its host: every terminal's transaction has its intended
    start (a deferred one is the deferred worker's), and each host its lag p99 (how late its terminals started
    against their schedule)."""
    results = tmp_path / "r.db"
    outcome = api.run_benchmark(_options(ray_cluster, two_warehouses, results, terminals=4, duration_s=2.0, hosts=2,
                                         rate=100.0, check=False))
    assert outcome.status is RunStatus.COMPLETE, outcome.result.errors
    samples = api.open_results(results).samples(outcome.run_id)
    terminals = [s for s in samples if not s.transaction.startswith("deferred_")]
    assert {s.terminal for s in terminals} == {0, 1, 2, 3} and all(s.intended is not None for s in terminals)
    record = api.open_results(results).run(outcome.run_id)
    for host in client_hosts(record.environment):
        assert host.schedule_lag_p99_s is not None and 0.0 <= host.schedule_lag_p99_s < 1.0
    report = api.report_of_run(results, outcome.run_id)
    assert report.rate is not None and report.rate.sustained, report.rate


def test_more_hosts_than_nodes_with_a_cpu_are_refused_in_one_line(ray_cluster: str) -> None:
    """The head has no CPU, as a database's machine that keeps clients off: two nodes take client hosts, not three."""
    ray = cluster.import_ray()
    with cluster.connected(ray, ray_cluster), pytest.raises(UserError) as refused:
        with cluster.placed_hosts(ray, ray_cluster, 3):
            pass
    assert str(refused.value) == (f"--hosts 3: the Ray cluster at {ray_cluster} has 2 node(s) with a CPU, and each "
                                  "client host needs one of its own")


def test_two_hosts_on_mariadb_run_every_terminal_on_its_own_warehouses(ray_cluster: str, server_workdir: Path,
                                                                        tmp_path: Path) -> None:
    """The same split on the other server engine (server-side calls, its C pump in each host's processes)."""
    engine = api.make_engine("mariadb", server_workdir, TWO_WAREHOUSES, {})
    with api.running(engine):
        api.load_database(engine, TWO_WAREHOUSES, seed=1)
    outcome = api.run_benchmark(api.BenchmarkOptions(
        engine="mariadb", settings={"warehouses": WAREHOUSES}, workdir=server_workdir, results=tmp_path / "r.db",
        terminals=4, warmup_s=0.5, duration_s=2.0, ray_address=ray_cluster, hosts=2))
    assert outcome.status is RunStatus.COMPLETE, outcome.result.errors
    assert {r.condition: r.passed for r in outcome.consistency} == {**{n: True for n in range(1, 13)}, 11: None}
    record = api.open_results(tmp_path / "r.db").run(outcome.run_id)
    assert [(host.terminals, host.homes) for host in client_hosts(record.environment)] == [((0, 2), (1,)),
                                                                                         ((1, 3), (2,))]
    assert {sample.terminal for sample in outcome.result.samples} == {0, 1, 2, 3}


def test_an_experiment_with_hosts_runs_each_run_from_them(ray_cluster: str, two_warehouses: Path,
                                                          tmp_path: Path) -> None:
    """``hosts = 2`` in the file and the cluster on the command line: the run of the plan is a run from two hosts."""
    from maximus.experiment import runner
    from maximus.cli.experiments import ConsoleProgress
    from rich.console import Console

    path = tmp_path / "hosts.toml"
    path.write_text('name = "hosts"\nengine = "postgres"\nclients = [4]\nrepeats = 1\nhosts = 2\n'
                    '[workload]\nwarehouses = 2\nwarmup = 0.5\nduration = 2\n')
    experiment_id = runner.start(path, two_warehouses, tmp_path / "r.db", ConsoleProgress(Console(quiet=True)),
                                 ray_address=ray_cluster)
    store = api.open_results(tmp_path / "r.db")
    try:
        [run] = store.runs(experiment_id)
        assert run.status is RunStatus.COMPLETE
        assert [(host.terminals, host.homes) for host in client_hosts(run.environment)] == [((0, 2), (1,)),
                                                                                          ((1, 3), (2,))]
    finally:
        store.close()
    assert api.show_experiment(experiment_id, tmp_path / "r.db").report.summary.step_names


def test_a_host_whose_run_raised_names_what_it_raised(ray_cluster: str) -> None:
    """A host's own error (a terminal that could not connect) as a run on one machine gives it, not Ray's wrapping."""
    ray = cluster.import_ray()

    def fails() -> None:
        raise EngineError("terminal 3 could not start: OperationalError: connection refused")

    with cluster.connected(ray, ray_cluster):
        with pytest.raises(ray.exceptions.RayTaskError) as raised:
            ray.get(ray.remote(num_cpus=1)(fails).remote())
        assert cluster.failure(ray, raised.value) == "terminal 3 could not start: OperationalError: connection refused"
        with pytest.raises(ray.exceptions.RayTaskError) as raised:
            ray.get(ray.remote(num_cpus=1)(lambda: 1 / 0).remote())
        assert cluster.failure(ray, raised.value) == "ZeroDivisionError: division by zero"


class _CtrlC:
    """A run ``Observer`` that sends this process a Ctrl-C once the run is ``at`` seconds from its origin."""

    def __init__(self, at: float) -> None:
        self.at, self.sent = at, False

    def started(self, warmup_s: float, duration_s: float, headline: Any) -> None:
        return None

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None:
        if not self.sent and elapsed_s >= self.at:
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_stops_every_host_and_keeps_what_they_measured(ray_cluster: str, two_warehouses: Path,
                                                              tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    with keyboard_interrupts():
        outcome = api.run_benchmark(_options(ray_cluster, two_warehouses, results, terminals=4, duration_s=30.0,
                                             hosts=2, check=False), observer=_CtrlC(at=1.5))
    assert outcome.status is RunStatus.INTERRUPTED
    record = api.open_results(results).run(outcome.run_id)
    assert record.status is RunStatus.INTERRUPTED
    assert 0.5 < record.window.end < 5.0  # cut at the stop, not the planned 30.5 s
    assert outcome.result.elapsed_s < 15.0
    stored_hosts = client_hosts(record.environment)
    assert [host.status for host in stored_hosts] == ["interrupted", "interrupted"]
    assert all(host.transactions > 0 for host in stored_hosts)


def _maximus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=240)


class _HostLost:
    """A run ``Observer`` that SIGKILLs one host's actor (its Ray worker process) and every process under it once the
    run is ``at`` seconds from its origin: the host is lost as with its node. The named semaphores its run had made
    are noted, for the test to remove: nobody else would (``remove_semaphores``)."""

    def __init__(self, at: float) -> None:
        self.at, self.killed = at, 0
        self.mapped: set[int] = set()

    def started(self, warmup_s: float, duration_s: float, headline: Any) -> None:
        return None

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None:
        if not self.killed and elapsed_s >= self.at:
            actors = [pid for pid in _process.descendants(os.getpid())
                      if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::ClientHost")]
            self.killed = max(actors)
            family = [self.killed, *_process.descendants(self.killed)]
            for pid in family:  # held: none makes a semaphore between the look and the kill
                os.kill(pid, signal.SIGSTOP)
            self.mapped = _process.shared_memory(family)[0]
            for pid in family:
                os.kill(pid, signal.SIGKILL)

    def remove_semaphores(self) -> None:
        remove_semaphores(self.mapped)


def test_a_lost_host_fails_the_run_naming_it_and_what_it_streamed_before_is_kept(ray_cluster: str,
                                                                                 two_warehouses: Path,
                                                                                 tmp_path: Path) -> None:
    results, lost = tmp_path / "r.db", _HostLost(at=2.0)
    try:
        outcome = api.run_benchmark(_options(ray_cluster, two_warehouses, results, terminals=4, duration_s=30.0,
                                             hosts=2, check=False), observer=lost)
    finally:
        lost.remove_semaphores()
    assert lost.killed and outcome.status is RunStatus.FAILED
    assert outcome.result.elapsed_s < 20.0  # the other host was stopped
    store = api.open_results(results)
    record = store.run(outcome.run_id)
    assert any("lost" in error for error in record.errors), record.errors
    [gone] = [host for host in client_hosts(record.environment) if host.status == "failed"]
    assert {sample.terminal for sample in store.samples(outcome.run_id)} >= set(gone.terminals)  # streamed first
