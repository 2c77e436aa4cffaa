"""The parts of a run from several client hosts that need no Ray cluster: the terminals' split by home, the clock's
offset from pings, the merge of the hosts' runs, the per-host record, its warnings and its table, a host's records
streamed as its run goes, and a host's run letting go of its shared memory."""

from __future__ import annotations

import itertools
import json
import os
import random
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from maximus import api
from maximus.analysis.hosts import host_warnings
from maximus.analysis.monitoring import CpuFigures
from maximus.analysis.metrics import run_figures
from maximus.client_hosts import CLIENT_HOSTS, ClientHostRecord, ClockReading, client_hosts, host_group
from maximus.driver.hosts.clock import synchronise
from maximus.driver.hosts.host import ClientHost
from maximus.driver.hosts.merge import merged
from maximus.driver.hosts.shares import check_shares, host_homes, host_terminals
from maximus.driver.collected import Collected
from maximus.driver.scheduler import DriveResult, DriveSpec
from maximus.engines import _process
from maximus.errors import UserError
from maximus.records import Outcome, RunStatus, TxnSample, Window
from maximus.report.hosts import host_columns, host_rows, render_client_hosts
from maximus.samples import Samples
from maximus.workloads.base import Homes
from maximus.workloads.tpcc import Tpcc
from maximus.workloads.tpcc.emulator import TpccRunSettings
from maximus.workloads.tpcc.random import NURandConstants
from maximus.workloads.tpcc.transaction import home_of

WAREHOUSES = Homes(5, "warehouses")


@pytest.mark.parametrize(("terminals", "hosts"), [(10, 2), (7, 3), (50, 5), (5, 5)])
def test_each_host_runs_the_terminals_of_its_own_warehouses_and_together_all(terminals: int, hosts: int) -> None:
    shares, homes = host_terminals(terminals, hosts, WAREHOUSES), host_homes(hosts, WAREHOUSES)
    assert sorted(itertools.chain.from_iterable(shares)) == list(range(terminals))
    for share, own in zip(shares, homes):
        assert share, "every host has a terminal"
        assert {home_of(terminal, WAREHOUSES.count).w_id for terminal in share} <= set(own)  # TPC-C's own deal
    assert sorted(itertools.chain.from_iterable(homes)) == [1, 2, 3, 4, 5]


def test_the_warehouses_are_dealt_to_the_hosts_in_turn() -> None:
    assert host_homes(2, WAREHOUSES) == [(1, 3, 5), (2, 4)]
    assert host_terminals(6, 2, WAREHOUSES) == [(0, 2, 4, 5), (1, 3)]  # terminal 5's home is warehouse 1


def test_terminals_without_homes_are_dealt_in_turn() -> None:
    assert host_terminals(5, 2, None) == [(0, 2, 4), (1, 3)]
    assert host_homes(2, None) == [(), ()]


@pytest.mark.parametrize(("terminals", "hosts", "homes", "message"), [
    (4, 3, Homes(2, "warehouses"), "--hosts 3 needs at least 3 warehouses"),
    (2, 3, Homes(3, "warehouses"), "--hosts 3 needs at least 3 terminals"),
    (2, 3, None, "--hosts 3 needs at least 3 terminals"),
])
def test_a_host_without_a_home_or_a_terminal_is_refused(terminals: int, hosts: int, homes: Homes | None,
                                                       message: str) -> None:
    with pytest.raises(UserError, match=message):
        check_shares(terminals, hosts, homes)


def test_the_clock_offset_comes_from_the_ping_with_the_smallest_round_trip() -> None:
    """A host 0.25 s ahead, its monotonic clock 1,000 s behind its wall clock; pings of 4, 1 and 9 ms, each split
    unevenly between the way out and back: the offset is right within the best ping's half round trip."""
    coordinator = [0.0]
    trips = iter([(0.003, 0.001), (0.0002, 0.0008), (0.001, 0.008)])

    def ping() -> tuple[float, float]:
        out, back = next(trips)
        coordinator[0] += out
        host_wall = coordinator[0] + 0.25
        coordinator[0] += back
        return host_wall, host_wall - 1000.0

    sync = synchronise(ping, pings=3, now=lambda: coordinator[0])
    assert sync.reading.round_trip_s == pytest.approx(0.001)
    assert sync.reading.bound_s == pytest.approx(0.0005)
    assert abs(sync.reading.offset_s - 0.25) <= sync.reading.bound_s
    assert sync.reading.offset_s == pytest.approx(0.25 - 0.0003)  # the ping's middle was 0.3 ms after the read
    assert abs(sync.host_monotonic(10.0) - (10.0 + 0.25 - 1000.0)) <= sync.reading.bound_s


def _samples(terminals: range, seed: int, count: int, names: tuple[str, ...] = ("new_order", "payment")) -> Samples:
    draw = random.Random(seed)
    return Samples.of(TxnSample(draw.choice(terminals), draw.choice(names), draw.uniform(0, 3),
                                draw.expovariate(200), Outcome.COMMITTED) for _ in range(count))


def test_merged_runs_keep_every_sample_and_give_the_percentiles_of_their_union() -> None:
    window = Window(0.5, 2.5)
    # each host numbers the transactions it met: the second's numbers mean other names than the first's
    one = DriveResult(_samples(range(0, 4, 2), 1, 500), {"a": 3, "b": 1}, window, RunStatus.COMPLETE, [], 3.0)
    two = DriveResult(_samples(range(1, 4, 2), 2, 700, ("order_status", "payment", "new_order")), {"a": 4},
                      Window(0.5, 2.0), RunStatus.INTERRUPTED, ["stopped"], 2.5)
    assert one.samples.names != two.samples.names
    run = merged([("host 1 (10.0.0.1)", one), ("host 2 (10.0.0.2)", two)], 3.2)
    assert sorted(run.samples, key=repr) == sorted([*one.samples, *two.samples], key=repr)
    assert [s.start for s in run.samples] == sorted(s.start for s in run.samples)
    assert run.facts == {"a": 7, "b": 1}
    assert run.window == Window(0.5, 2.0)  # the narrowest
    assert run.status is RunStatus.INTERRUPTED
    assert run.errors == ["host 2 (10.0.0.2): stopped"]
    figures = run_figures(run.samples, run.window, ("new_order", "payment"), "new_order")
    # a run on one machine keeps its samples in order of start too: every figure is the union's, bit for bit
    union = sorted([*one.samples, *two.samples], key=lambda sample: sample.start)
    assert figures == run_figures(union, run.window, ("new_order", "payment"), "new_order")
    # in any order, every percentile (an average is a sum of floats, whose last bit depends on the order)
    unordered = run_figures([*one.samples, *two.samples], run.window, ("new_order", "payment"), "new_order")
    assert [(t.latency.p50, t.latency.p90, t.latency.p95, t.latency.p99, t.latency.maximum, t.histogram)
            for t in figures.transactions] == \
        [(t.latency.p50, t.latency.p90, t.latency.p95, t.latency.p99, t.latency.maximum, t.histogram)
         for t in unordered.transactions]


def test_a_fault_the_coordinator_found_fails_the_merged_run_and_comes_first() -> None:
    one = DriveResult(Samples.empty(), {}, Window(1, 2), RunStatus.INTERRUPTED, [], 1.0)
    two = DriveResult(Samples.empty(), {}, Window(1, 1.5), RunStatus.FAILED, ["terminal 3 could not start"], 1.0)
    run = merged([("host 1 (a)", one), ("host 2 (b)", two)], 2.0, fault="the server is gone")
    assert run.status is RunStatus.FAILED
    assert run.errors == ["the server is gone", "host 2 (b): terminal 3 could not start"]
    assert merged([("host 1 (a)", one)], 1.0, interrupted=True).status is RunStatus.INTERRUPTED
    complete = DriveResult(Samples.empty(), {}, Window(1, 2), RunStatus.COMPLETE, [], 1.0)
    assert merged([("host 1 (a)", complete)], 1.0, interrupted=True).status is RunStatus.INTERRUPTED


def _host(number: int, bound_s: float = 0.0004, cpu_s: float = 1.0, after: ClockReading | None = None,
          late_s: float = 0.0, niceness: int = 0) -> ClientHostRecord:
    before = ClockReading(0.00002, bound_s, 2 * bound_s)
    return ClientHostRecord(number, f"node{number}", f"10.0.0.{number}", 2.0, (number - 1, number + 1),
                            (number,), "warehouses", before, after or before, late_s, niceness, cpu_s, 10.0, 1234,
                            None, "complete")


def test_a_host_record_is_kept_as_json_and_read_back_as_it_was() -> None:
    hosts = [_host(1), _host(2, after=ClockReading(0.001, 0.0003, 0.0006))]
    stored = json.loads(json.dumps({CLIENT_HOSTS: [host.to_json() for host in hosts]}))
    assert client_hosts(stored) == tuple(hosts)
    assert client_hosts({}) == ()


def test_a_loose_clock_a_late_start_and_a_busy_client_are_each_a_warning_naming_its_host() -> None:
    assert host_warnings([_host(1), _host(2)]) == []  # 1 of 2 CPUs for 10 s is 5 %: waiting for the server
    loose, drifted = _host(1, bound_s=0.006), _host(2, after=ClockReading(0.009, 0.0004, 0.0008))
    busy, late, nice = _host(3, cpu_s=18.5), _host(4, late_s=0.4), _host(5, niceness=15)
    warnings = host_warnings([loose, drifted, busy, late, nice])
    assert len(warnings) == 5
    assert warnings[0].startswith("host 1 (10.0.0.1): its clock's offset to the coordinator's is known within "
                                  "±6.0 ms")
    assert warnings[1].startswith("host 2 (10.0.0.2): ") and "drifted 9.0 ms" in warnings[1]
    assert warnings[2].startswith("host 3 (10.0.0.3): client-bound: its client used 92% of the 2 CPU(s)")
    assert warnings[3].startswith("host 4 (10.0.0.4): its terminals started 0.40 s after the agreed start")
    assert warnings[4].startswith("host 5 (10.0.0.5): its terminals ran at niceness 15 (Ray's for its workers)")


def _machine(idle: float) -> CpuFigures:
    return CpuFigures(100 - idle - 5, 5, 0, idle, 0, 2 * (100 - idle) / 100)


def test_a_host_whose_machine_was_busy_while_its_client_was_not_is_a_warning_naming_it() -> None:
    """Something else on the host's machine took the CPUs its terminals needed: idle under 10 % while its client used
    at most 90 % of its share. A client-bound host is told so instead, and an idle machine is no warning."""
    machines = {host_group(1): _machine(idle=3.0), host_group(2): _machine(idle=40.0), host_group(3): _machine(2.0)}
    warnings = host_warnings([_host(1), _host(2), _host(3, cpu_s=18.5)], machines)
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("host 1 (10.0.0.1): its machine was 97 % busy (idle 3 %) while its client used 5% "
                                  "of the 2 CPU(s) Ray gave it: other processes there took CPU its terminals needed")
    assert warnings[1].startswith("host 3 (10.0.0.3): client-bound")
    assert host_warnings([_host(1)]) == []  # a run stored before the hosts' machines were sampled
    # the report's table (the terminal's gives it in the monitoring part: a column more would not fit 120 characters)
    header = host_columns([_host(1), _host(2)], {host_group(1): _machine(idle=3.0)})
    rows = host_rows([_host(1), _host(2)], {host_group(1): _machine(idle=3.0)})
    assert header.index("Client CPU") + 1 == header.index("Machine idle") == header.index("Transactions") - 1
    assert rows[0][header.index("Machine idle")] == "3 %" and rows[1][header.index("Machine idle")] == "-"
    assert "Machine idle" not in host_columns([_host(1)])  # a run stored before the hosts' machines were sampled


def test_show_prints_a_row_per_host_and_nothing_for_a_run_on_one_machine() -> None:
    console = Console(width=200, record=True)
    render_client_hosts(console, {CLIENT_HOSTS: [_host(1).to_json(), _host(2).to_json()]})
    text = console.export_text()
    assert "Client hosts" in text and "Warehouses" in text
    assert "10.0.0.1" in text and "10.0.0.2" in text and "+0.020 ± 0.400" in text and "1,234" in text
    assert "Lag p99 ms" not in text and "Status" not in text  # a closed-loop run whose hosts all completed
    scheduled = replace(_host(1), schedule_lag_p99_s=0.0021, status="interrupted")
    console = Console(width=200, record=True)
    render_client_hosts(console, {CLIENT_HOSTS: [scheduled.to_json()]})
    text = console.export_text()
    assert "Lag p99 ms" in text and "2.10" in text and "interrupted" in text
    console = Console(width=200, record=True)
    render_client_hosts(console, {"engine": {"name": "postgres"}})
    assert console.export_text() == ""


def test_a_host_lets_go_of_its_runs_shared_memory_once_the_run_is_done(workdir: Path) -> None:
    """The named semaphores of a run's queues and events are unlinked as the run goes: a host that kept its run
    (for a stop) kept them, and Ray's kill of the actor at the end left them in /dev/shm for good."""
    engine = api.make_engine("sqlite", workdir, api.Build.of("tpcc", {"warehouses": 1}), {})
    engine.restore()
    settings = TpccRunSettings(1, 1, NURandConstants.for_run(0, 1))
    host, before = ClientHost(), _process.shared_memory([os.getpid()])[0]

    def release() -> None:
        host.ready()
        host.release(time.monotonic())

    threading.Thread(target=release, daemon=True).start()
    done = host.drive(DriveSpec(engine, Tpcc(), settings, 1, 0.1, 0.3))
    taken = host.take()
    assert done.result.status is RunStatus.COMPLETE and (taken.samples or taken.runs)
    deadline = time.monotonic() + 5  # a queue's feeder thread, ending, holds its lock and semaphore a moment longer
    while (named := _process.shared_memory_files(_process.shared_memory([os.getpid()])[0] - before)) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not named


def test_a_host_streams_what_its_terminals_record_while_they_run_each_transaction_once(workdir: Path) -> None:
    """What the coordinator takes while the host drives is there before the run ends; the takes together, the last
    one after the run, hold every transaction once, the host's facts and its deferred results, and the run's own
    result none of them."""
    engine = api.make_engine("sqlite", workdir, api.Build.of("tpcc", {"warehouses": 1}), {})
    engine.restore()
    settings = TpccRunSettings(1, 1, NURandConstants.for_run(0, 1))
    host, taken, during, sent = ClientHost(), [], threading.Event(), []
    put = host._outbox.put

    def counted(samples: list, runs: list, results: list, facts: dict) -> None:  # what the run hands over
        sent.append(len(samples) + sum(len(names) for _, names, _ in runs))
        put(samples, runs, results, facts)

    host._outbox.put = counted  # type: ignore[method-assign]

    def release_and_take() -> None:
        host.ready()
        host.release(time.monotonic())
        time.sleep(1.5)  # about three of the terminals' half-second flushes
        taken.append(host.take())
        during.set()

    threading.Thread(target=release_and_take, daemon=True).start()
    done = host.drive(DriveSpec(engine, Tpcc(), settings, 2, 0.2, 2.5))
    assert during.is_set() and (taken[0].samples or taken[0].runs)  # taken while the run went on
    taken.append(host.take())
    last = host.take()
    assert not last.samples and not last.runs  # each record is taken once
    assert not done.result.samples and not done.result.facts and not done.result.deferred
    collected = Collected()
    for streamed in taken:
        collected.add(streamed.samples, streamed.runs, streamed.origin)
    samples = list(collected.samples())
    assert len(samples) == sum(sent) >= taken[-1].all_done > 0  # every transaction, once
    assert len({(s.terminal, s.transaction, s.start) for s in samples}) == len(samples)
    assert sum(value for streamed in taken for key, value in streamed.facts.items() if key.endswith(".order_lines"))
    assert [streamed.results for streamed in taken if streamed.results]  # Delivery's result records
    user = [(at, value) for streamed in taken for at, name, value, _, labels in streamed.readings
            if name == "process_cpu_seconds_total" and labels == {"group": "client", "mode": "user"}]
    assert len(user) >= 3 and user[0][0] < 1.5 < user[-1][0]  # at the release, at the takes, as the run ended
    assert all(earlier[1] <= later[1] for earlier, later in zip(user, user[1:])) and user[-1][1] > 0
