"""The PostgreSQL sampler: view rows to readings, and real managed servers
(the sampler alone, a monitored run, an injected mismatch)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import psycopg
import pytest
from typer.testing import CliRunner

from maximus import api, runs
from maximus.analysis.crosschecks import cross_checks
from maximus.analysis.monitoring import monitoring_figures
from maximus.cli.app import app
from maximus.engines.postgres import PostgresEngine
from maximus.records import Outcome, RunStatus, TxnSample, Window
from maximus.records import MetricSample
from maximus.samplers.base import Reading, Sampler, SamplingContext
from maximus.samplers.postgres import (BGWRITER_COLUMNS, CHECKPOINTER_COLUMNS, DATABASE_COLUMNS, DATABASE_WAITS,
                                       WAL_COLUMNS, PostgresSampler, column_readings, io_readings, WaitSampler,
                                       wal_io_readings)

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})

ON = {"track_io_timing": True, "track_wal_io_timing": True}
OFF = {"track_io_timing": False, "track_wal_io_timing": False}


def _values(readings: list[Reading], name: str) -> dict[tuple, float]:
    return {tuple(sorted(r.labels.items())): r.value for r in readings if r.name == name}


# --- rows of the statistics views to readings (no server) ----------------------------------------------


def test_database_row_gives_commits_buffers_and_the_timed_data_file_read() -> None:
    row = {"xact_commit": 120, "xact_rollback": 3, "blks_hit": 900, "blks_read": 100, "blk_read_time": 25.0,
           "blk_write_time": 2.0, "active_time": 1500.0, "idle_in_transaction_time": None, "deadlocks": 0}
    readings = column_readings(row, DATABASE_COLUMNS, ON) + column_readings(row, DATABASE_WAITS, ON)
    assert _values(readings, "commits_total") == {(("counts", "all"), ("from", "pg_stat_database.xact_commit")): 120}
    assert _values(readings, "buffer_hits_total") == {(): 900} and _values(readings, "buffer_misses_total") == {(): 100}
    read_wait = (("event", "IO:DataFileRead"), ("role", "data_read"))
    assert _values(readings, "waits_total") == {read_wait: 100}
    assert _values(readings, "wait_seconds_total") == {read_wait: pytest.approx(0.025)}  # milliseconds to seconds
    assert _values(readings, "session_seconds_total") == {(("state", "active"),): 1.5}  # NULL: not read
    untimed = column_readings(row, DATABASE_COLUMNS, OFF) + column_readings(row, DATABASE_WAITS, OFF)
    assert "wait_seconds_total" not in {r.name for r in untimed}  # 0 without timing would read as 0 ms waits
    assert "block_write_seconds_total" not in {r.name for r in untimed} and _values(untimed, "waits_total")


def test_wal_syncs_are_the_log_sync_wait_and_need_wal_timing() -> None:
    row = {"wal_records": 10, "wal_fpi": 2, "wal_bytes": 4096, "wal_buffers_full": 0, "wal_write": 7, "wal_sync": 5,
           "wal_write_time": 1.0, "wal_sync_time": 10.0}
    readings = column_readings(row, WAL_COLUMNS, ON)
    sync = (("event", "IO:WALSync"), ("role", "log_sync"))
    assert _values(readings, "waits_total") == {sync: 5, (("event", "IO:WALWrite"),): 7}
    assert _values(readings, "wait_seconds_total")[sync] == pytest.approx(0.010)
    assert _values(readings, "wal_bytes_total") == {(): 4096}
    assert "wait_seconds_total" not in {r.name for r in column_readings(row, WAL_COLUMNS, OFF)}


def test_checkpoints_read_the_same_from_pg_stat_bgwriter_and_pg_stat_checkpointer() -> None:
    old = column_readings({"checkpoints_timed": 1, "checkpoints_req": 4, "buffers_checkpoint": 300,
                           "checkpoint_write_time": 1500.0}, BGWRITER_COLUMNS, OFF)
    new = column_readings({"num_timed": 1, "num_requested": 4, "buffers_written": 300, "write_time": 1500.0,
                           "restartpoints_done": 0}, CHECKPOINTER_COLUMNS, OFF)  # PostgreSQL 17
    assert sorted(old) == sorted(new)
    assert _values(old, "checkpoints_total") == {(("kind", "timed"),): 1, (("kind", "requested"),): 4}
    assert _values(old, "checkpoint_write_seconds_total") == {(): 1.5}


def test_pg_stat_io_is_summed_per_backend_type_and_wal_comes_from_it_on_postgresql_18() -> None:
    rows = [{"backend_type": "client backend", "object": "relation", "context": "normal", "reads": 10, "writes": 1,
             "hits": 100, "fsyncs": None, "read_time": 4.0},
            {"backend_type": "client backend", "object": "relation", "context": "bulkread", "reads": 5, "writes": 0,
             "hits": 7, "fsyncs": None, "read_time": 1.0},
            {"backend_type": "checkpointer", "object": "relation", "context": "normal", "reads": None, "writes": 30,
             "hits": None, "fsyncs": 3, "read_time": None},
            {"backend_type": "walwriter", "object": "wal", "context": "normal", "writes": 8, "fsyncs": 6,
             "write_time": 2.0, "fsync_time": 12.0}]
    operations = _values(io_readings(rows, ON), "io_operations_total")
    assert operations[(("backend_type", "client backend"), ("op", "read"))] == 15
    assert operations[(("backend_type", "checkpointer"), ("op", "fsync"))] == 3
    assert (("backend_type", "checkpointer"), ("op", "read")) not in operations  # NULL: does not apply
    assert not [key for key in operations if key[0][1] == "walwriter"]  # WAL is not a relation
    assert _values(io_readings(rows, ON), "io_seconds_total")[(("backend_type", "client backend"), ("op", "read"))] \
        == pytest.approx(0.005)
    assert "io_seconds_total" not in {r.name for r in io_readings(rows, OFF)}
    wal = wal_io_readings(rows, ON)
    sync = (("event", "IO:WALSync"), ("role", "log_sync"))
    assert _values(wal, "waits_total")[sync] == 6 and _values(wal, "wait_seconds_total")[sync] == pytest.approx(0.012)
    assert wal_io_readings(rows[:3], ON) == []  # PostgreSQL 16 and 17: no WAL rows in pg_stat_io


# --- derived figures from PostgreSQL's names (no server) ------------------------------------------------


def _at(name: str, points: list[tuple[float, float]], **labels: str) -> list[MetricSample]:
    return [MetricSample(t, "postgres", name, v, "count", labels) for t, v in points]


def test_sampled_wait_events_rank_by_share_and_an_event_first_seen_late_counted_from_zero() -> None:
    window = Window(1.0, 5.0)
    samples = [*_at("activity_snapshots_total", [(0, 0), (1.0, 10), (5.0, 50)]),
               *_at("active_backend_samples_total", [(0, 0), (1.0, 20), (5.0, 220)]),
               *_at("wait_samples_total", [(1.0, 5), (5.0, 105)], event="IO:WALSync"),
               *_at("wait_samples_total", [(3.0, 30), (5.0, 50)], event="Lock:transactionid"),  # first seen at 3 s
               *_at("wait_samples_total", [(0.5, 4), (5.0, 4)], event="IO:DataFileRead")]  # none in the window
    waits = monitoring_figures(samples, window, 10.0).waits
    assert [(w.event, w.share) for w in waits] == [("IO:WALSync", 0.5), ("Lock:transactionid", 0.25)]
    assert waits[0].seconds == pytest.approx(100 * 0.1)  # 40 snapshots in 4 s: each sample stands for 0.1 s
    assert waits[0].average_ms is None  # sampled: shares, not counted waits


def test_commit_check_on_a_counter_of_every_transaction_allows_psycopgs_own_transactions() -> None:
    done = Outcome.COMMITTED
    names = ["new_order"] * 50 + ["payment"] * 40 + ["order_status", "stock_level", "delivery", "deferred_delivery"]
    transactions = [TxnSample(0, name, 0.01 * i, 0.01, done) for i, name in enumerate(names)]
    writers = {"new_order", "payment", "deferred_delivery"}
    driver = 50 + 40 + 3  # every committed transaction run in the database: the delivery acknowledgement is not

    def check(database: float, sessions: float = 4, rollbacks: float = 1) -> object:
        samples = [*_at("commits_total", [(-0.1, 1000), (2.0, 1000 + database)], counts="all", **{"from": "x"}),
                   *_at("rollbacks_total", [(-0.1, 7), (2.0, 7 + rollbacks)]),
                   *_at("client_backends", [(-0.1, sessions), (2.0, 0)])]
        (result,) = cross_checks(samples, transactions, Window(0.5, 1.5), writers, embedded=False)
        return result

    assert check(driver).passed and check(driver).reference == driver
    assert check(driver + 2 + 5 * 4 + 3 * 1).passed  # absolute 2, then 5 per session and 3 per rollback
    assert not check(driver + 2 + 5 * 4 + 3 * 1 + 1).passed
    assert check(driver - 2).passed and not check(driver - 3).passed  # fewer: only the usual tolerance
    assert "93 committed transactions" in check(driver + 100).warning()


# --- real managed servers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(server_workdir: Path) -> Path:
    """The pristine 1-warehouse build in ``server_workdir``'s cluster (built once for the session)."""
    engine = api.make_engine("postgres", server_workdir, ONE_WAREHOUSE, {})
    with api.running(engine):
        if not engine.has_snapshot():
            api.load_database(engine, ONE_WAREHOUSE, seed=1)
    return server_workdir


@pytest.fixture
def probe(loaded: Path) -> Iterator[PostgresEngine]:
    """A running managed server with a scratch database and ``track_io_timing`` left off by the user."""
    engine = PostgresEngine(loaded, "sampler_probe", {"track_io_timing": "off"})
    engine.start()
    try:
        engine.provision()
        with psycopg.connect(engine._dsn(engine.database), autocommit=True) as connection:
            connection.execute("CREATE TABLE t (id int PRIMARY KEY, v int)")
            connection.execute("INSERT INTO t VALUES (1, 0)")
        yield engine
    finally:
        engine.destroy()
        engine.stop()


class Committer:
    """A client process that connects, says so, and on a word commits ``commits`` transactions and exits.

    It leaves its backend busy in a transaction for half a second: the backend exits (and publishes its
    counters) only once it finds its client gone, well after the client process has.
    """

    def __init__(self, engine: PostgresEngine, commits: int) -> None:
        code = (f"import os, psycopg\nc = psycopg.connect({engine._dsn(engine.database)!r}, autocommit=True)\n"
                "print('ready', flush=True)\ninput()\n"
                f"for i in range({commits}): c.execute('UPDATE t SET v = v + 1', prepare=False)\n"
                "c.pgconn.send_query(b'BEGIN; SELECT pg_sleep(0.5)')\nos._exit(0)\n")  # never committed
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        assert self.process.stdout.readline().strip() == "ready"

    def commit_and_exit(self) -> None:
        self.process.communicate("\n", timeout=30)  # reaped on return, as the driver reaps its workers


def _sessions_settle(engine: PostgresEngine, sessions: int) -> None:
    """Until exactly ``sessions`` sessions are connected to the engine's database (others have exited)."""
    with psycopg.connect(engine._dsn("postgres"), autocommit=True) as connection:
        deadline = time.monotonic() + 10
        while connection.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s",
                                 (engine.database,)).fetchone()[0] != sessions:
            assert time.monotonic() < deadline, "sessions did not settle"
            time.sleep(0.02)


def test_sampler_on_a_live_server_reports_its_settings_the_server_and_a_lock_wait(probe: PostgresEngine) -> None:
    (sampler,) = probe.samplers()
    notes = sampler.open(SamplingContext({"client": (os.getpid(),), "driver": (os.getpid(),)}))
    try:
        assert any("Maximus turned on track_wal_io_timing for this run" in note for note in notes)
        assert any("track_io_timing is off on this server" in note for note in notes)  # the user's knob wins
        first = sampler.read()
        for r in first:
            assert isinstance(r, Reading) and r.name.isidentifier() and math.isfinite(r.value), r
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in r.labels.items()), r
        assert _values(first, "processes")[(("group", "server"),)] >= 5  # postmaster, checkpointer, walwriter, ...
        events = {dict(labels)["event"] for labels in _values(first, "wait_seconds_total")}
        assert events == {"IO:WALWrite", "IO:WALSync"}  # no IO:DataFileRead time: track_io_timing is off
        _hold_a_row_lock_while(probe, lambda: _wait_for(sampler, "Lock:transactionid"))
        last = sampler.read()
        counters = {(r.name, tuple(sorted(r.labels.items()))): r.value for r in first if r.name.endswith("_total")}
        now = {(r.name, tuple(sorted(r.labels.items()))): r.value for r in last}
        assert all(now[key] >= value for key, value in counters.items())
        assert any(now[key] > value for key, value in counters.items())
    finally:
        sampler.close()
    sampler.close()  # twice: still no exception


def test_wait_sampling_that_lost_its_session_says_why_at_the_next_reading(probe: PostgresEngine) -> None:
    """The snapshots run in a thread of their own; a failure there must not read as "no waits"."""
    (sampler,) = probe.samplers()
    sampler.open(SamplingContext({"client": (os.getpid(),), "driver": (os.getpid(),)}))
    try:
        with psycopg.connect(probe._dsn("postgres"), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE application_name = 'maximus-sampler' AND pid <> %s",
                          (sampler._connection.info.backend_pid,))
        deadline = time.monotonic() + 10
        with pytest.raises(RuntimeError, match="wait-event sampling stopped: .*connection"):
            while time.monotonic() < deadline:
                sampler.read()
                time.sleep(0.05)
    finally:
        sampler.close()


def test_wait_snapshots_count_the_active_sessions_of_the_run_database_but_the_excluded_ones(
        probe: PostgresEngine) -> None:
    """Three sessions of the run's database asleep in pg_sleep, one of them excluded (as the sampler's own
    sessions are): each snapshot sees the other two, waiting in Timeout:PgSleep."""
    sessions = [psycopg.connect(probe._dsn(probe.database), autocommit=True) for _ in range(3)]
    waits = psycopg.connect(probe._dsn("postgres"), autocommit=True)
    sampler = WaitSampler(waits, probe.database, [sessions[0].info.backend_pid, waits.info.backend_pid],
                          per_second=20)
    try:
        for session in sessions:
            session.pgconn.send_query(b"SELECT pg_sleep(3)")
        _sessions_active(probe, 3)
        sampler.start()
        time.sleep(1.0)
        counts = sampler.counts()
        assert counts.snapshots >= 5
        assert counts.events == {"Timeout:PgSleep": 2 * counts.snapshots}
        assert counts.active == 2 * counts.snapshots
    finally:
        sampler.stop()
        for session in sessions:
            session.cancel_safe()
            session.close()


def _sessions_active(engine: PostgresEngine, sessions: int) -> None:
    with psycopg.connect(engine._dsn("postgres"), autocommit=True) as connection:
        deadline = time.monotonic() + 10
        while connection.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND state = 'active'",
                                 (engine.database,)).fetchone()[0] < sessions:
            assert time.monotonic() < deadline, "the sessions did not start their queries"
            time.sleep(0.02)


def test_the_reading_after_the_clients_exited_holds_all_their_commits(probe: PostgresEngine) -> None:
    """A backend publishes its counters at most once a second, and when it exits: the sampler waits for that."""
    committer = Committer(probe, 50)
    _sessions_settle(probe, 1)
    (sampler,) = probe.samplers()
    sampler.open(SamplingContext({"client": (committer.process.pid,), "driver": (os.getpid(),)}))
    try:
        before = _commits(sampler.read())
        committer.commit_and_exit()
        assert _commits(sampler.read()) - before == 50
    finally:
        sampler.close()


def _commits(readings: list[Reading]) -> float:
    (value,) = _values(readings, "commits_total").values()
    return value


def _hold_a_row_lock_while(engine: PostgresEngine, body) -> None:
    """One session holds a row's lock and another waits for it (Lock:transactionid) while ``body`` runs."""
    dsn = engine._dsn(engine.database)
    with psycopg.connect(dsn) as holder:
        holder.execute("UPDATE t SET v = v + 1")
        blocked = subprocess.Popen([sys.executable, "-c", f"import psycopg\nc = psycopg.connect({dsn!r})\n"
                                    "c.execute(\"SET statement_timeout = '20s'\")\nc.execute('UPDATE t SET v = 0')\n"
                                    "c.commit()"])
        try:
            body()
        finally:
            holder.rollback()
            blocked.wait(timeout=30)


def _wait_for(sampler: Sampler, event: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _values(sampler.read(), "wait_samples_total").get((("event", event),), 0) >= 3:
            return
        time.sleep(0.1)
    raise AssertionError(f"no {event} wait sampled in 10 s")


def test_a_server_maximus_does_not_own_is_sampled_without_its_processes(probe: PostgresEngine) -> None:
    dsn = probe._dsn("postgres")
    external = PostgresEngine(probe.workdir, probe.database, {}, {"dsn": dsn})
    assert external.effective_settings["track_io_timing"] == "off"  # never turned on behind the owner's back
    (sampler,) = external.samplers()
    notes = sampler.open(SamplingContext({"client": (), "driver": (os.getpid(),)}))
    try:
        assert any("its processes are not sampled" in note for note in notes)
        assert not any("Maximus turned on" in note for note in notes)
        readings = sampler.read()
        assert "commits_total" in {r.name for r in readings}
        assert not [r for r in readings if r.labels.get("group") == "server"]
    finally:
        sampler.close()


def _run(workdir: Path, results: Path) -> api.RunOutcome:
    return api.run_benchmark(api.BenchmarkOptions(engine="postgres", workdir=workdir, results=results, terminals=4,
                                                  warmup_s=1.0, duration_s=4.0, check=False))


def test_a_monitored_run_shows_commits_wal_waits_and_server_cpu(loaded: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    outcome = _run(loaded, results)
    report = api.report_of_run(results, outcome.run_id)
    figures, checks = report.monitoring.figures, {c.name: c for c in report.monitoring.checks}
    assert outcome.status is RunStatus.COMPLETE
    assert set(figures.sources) == {"os", "postgres", "monitor"}
    engine = {(s.name, tuple(sorted(s.labels.items()))): s for s in figures.engine}
    assert engine[("commits_total", (("counts", "all"), ("from", "pg_stat_database.xact_commit")))].value > 100
    assert engine[("wal_bytes_total", ())].value > 100_000 and engine[("buffer_hits_total", ())].value > 1000
    assert engine[("client_backends", ())].value >= 4  # the terminals; it read 0, as after the run
    sync = ("IO:WALSync", "log_sync")
    assert engine[("waits_total", (("event", sync[0]), ("role", sync[1])))].value > 10
    assert engine[("wait_seconds_total", (("event", sync[0]), ("role", sync[1])))].value > 0
    assert figures.log_sync_wait_ms is not None and 0 < figures.log_sync_wait_ms < 1000
    assert figures.data_read_wait_ms is not None and figures.data_read_wait_ms >= 0
    assert 0.5 < figures.buffer_hit_ratio <= 1
    assert figures.waits and all(0 < w.share <= 1 for w in figures.waits)  # synchronous commits wait for something
    assert sum(w.share for w in figures.waits) <= 1
    server = figures.groups["server"]
    assert server.cpus > 0.05 and server.processes >= 10  # 5 backends and the server's own processes
    assert not report.monitoring.embedded
    assert checks["commits"].passed, checks["commits"].detail
    assert checks["reads"].passed, checks["reads"].detail
    assert [w for w in report.record.warnings if w.startswith("monitoring")] == [
        next(w for w in report.record.warnings if "Maximus turned on track_io_timing and track_wal_io_timing" in w)]
    assert report.record.effective_knobs["track_wal_io_timing"] == "on"
    assert report.record.engine_settings["track_io_timing"] == "on"

    shown = CliRunner().invoke(app, ["show", str(outcome.run_id), "--results", str(results)])
    assert shown.exit_code == 0, shown.output
    log_sync = shown.output.split("Log sync wait ms", 1)[1].split("│")[1].strip()
    assert float(log_sync) > 0
    assert "server" in shown.output.split("Process CPU in the window:", 1)[1].splitlines()[0]
    assert "Top wait events:" in shown.output and "Cross-check commits: ok" in shown.output
    top = shown.output.split("Top wait events:", 1)[1].split("\n", 1)[0]
    assert re.search(r"\d+\.\d% of active time", top), top  # sampled events as shares, not seconds


class Skewed(Sampler):
    """The PostgreSQL sampler with 500 commits too many from its second reading on: an injected mismatch."""

    def __init__(self, inner: Sampler) -> None:
        self.inner, self.source, self.reads = inner, inner.source, 0

    def open(self, context: SamplingContext) -> list[str]:
        return self.inner.open(context)

    def read(self) -> list[Reading]:
        self.reads += 1
        extra = 500 if self.reads > 1 else 0
        return [r._replace(value=r.value + extra) if r.name == "commits_total" else r for r in self.inner.read()]

    def close(self) -> None:
        self.inner.close()


def test_an_injected_commit_mismatch_and_a_sampler_that_cannot_start_are_warnings(
        loaded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = runs.run_samplers

    def samplers(engine: PostgresEngine) -> list[Sampler]:
        os_sampler, postgres = real(engine)
        missing = PostgresSampler(lambda: engine._dsn("postgres"), "no_such_database", None)
        missing.source = "postgres-missing"
        return [os_sampler, Skewed(postgres), missing]

    monkeypatch.setattr(runs, "run_samplers", samplers)
    results = tmp_path / "r.db"
    outcome = _run(loaded, results)
    report = api.report_of_run(results, outcome.run_id)
    assert outcome.status is RunStatus.COMPLETE and outcome.result.samples
    assert [w for w in report.record.warnings if "'postgres-missing' could not start" in w and "no_such_database" in w]
    assert not [w for w in report.record.warnings if w.startswith("cross-check")]  # a verdict: the read side's
    (mismatch,) = [w for w in report.warnings if w.startswith("cross-check of commits failed")]
    driver = int(mismatch.split("the driver counted ")[1].split(" ")[0].replace(",", ""))
    database = int(mismatch.split("xact_commit) ")[1].split(" ")[0].replace(",", ""))
    assert driver > 100 and database - driver >= 500
