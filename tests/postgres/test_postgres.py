"""PostgreSQL on a real managed server started by the tests: lifecycle, knobs, both transaction modes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable

import psycopg
import pytest
from rich.console import Console

from maximus import api
from maximus.engines import _process
from maximus.engines.postgres import PostgresEngine, find_bin_dir, system_service_in
from maximus.errors import EngineError, UserError
from maximus.driver.retry import RetryPolicy
from maximus.driver.terminal import transaction_runner
from maximus.experiment import runner
from maximus.experiment.loader import load_experiment
from maximus.records import Outcome, RunStatus
from maximus.report.console import render_header
from maximus.workloads.tpcc import Tpcc, schema
from maximus.workloads.tpcc.delivery import Delivery, DeliveryInput
from maximus.workloads.tpcc.new_order import NewOrder, NewOrderInput, OrderLine
from maximus.workloads.tpcc.server_side import Call, ServerSide

from interrupting import default_dispositions, keyboard_interrupts, worker_processes  # tests/interrupting.py
from observers import Quiet, Stall  # tests/observers.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


@pytest.mark.parametrize("mode", ["server", "client"])
def test_both_transaction_modes_pass_every_consistency_condition(loaded: Path, tmp_path: Path, mode: str) -> None:
    options = api.BenchmarkOptions(engine="postgres", workdir=loaded, results=tmp_path / "r.db", terminals=4,
                                   warmup_s=1.0, duration_s=4.0, transactions=mode)
    outcome = api.run_benchmark(options)
    assert outcome.status.value == "complete", outcome.result.errors
    assert {r.condition: r.passed for r in outcome.consistency} == {**{n: True for n in range(1, 13)}, 11: None}
    samples = outcome.result.samples
    assert {s.terminal for s in samples} == {0, 1, 2, 3}
    assert {s.outcome for s in samples if s.transaction != "new_order"} == {Outcome.COMMITTED}
    assert {s.outcome for s in samples if s.transaction == "new_order"} <= {Outcome.COMMITTED, Outcome.ROLLED_BACK}
    store = api.open_results(tmp_path / "r.db")
    record = store.run(outcome.run_id)
    store.close()
    assert record.spec.options["transactions"] == mode
    isolation = dict(part.split(": ", 1) for part in record.spec.options["isolation"].split("; "))  # 3.4.0.1
    assert isolation["order_status"] == ("read committed" if mode == "server" else "repeatable read") + \
        ", one snapshot for all its reads"
    assert isolation["new_order"].startswith("read committed, ")
    assert isolation["stock_level"].startswith("read committed")
    assert record.engine_settings["server_version"].startswith("15") or record.engine_settings["server_version"]
    assert _server_pids(loaded) == []  # stopped after the run


@pytest.mark.parametrize("mode", ["server", "client"])
def test_eight_terminals_on_two_warehouses_deliver_an_order_in_every_district(server_workdir: Path, tmp_path: Path,
                                                                             mode: str) -> None:
    """2.7.4.2, the audit's case: server-side, 8 terminals on 2 warehouses skipped 5.66 % of their district
    deliveries while every district still had about 1,000 undelivered orders. Every Delivery now delivers ten,
    each order once, and the run's result file (2.7.2.3) and validity report say so."""
    results = tmp_path / "r.db"
    options = api.BenchmarkOptions(engine="postgres", workdir=server_workdir, results=results,
                                   settings={"warehouses": 2}, terminals=8, warmup_s=1.0, duration_s=5.0,
                                   transactions=mode)
    outcome = api.run_benchmark(options)
    assert outcome.status is RunStatus.COMPLETE, outcome.result.errors
    assert all(r.passed is not False for r in outcome.consistency)
    store = api.open_results(results)
    try:
        deliveries = store.deferred_results(outcome.run_id)
        report = api.analyse_run(store, outcome.run_id)
    finally:
        store.close()
    assert len(deliveries) > 40 and {r.outcome for r in deliveries} == {Outcome.COMMITTED}
    assert all(r.record["w_id"] in (1, 2) and None not in r.record["delivered"] for r in deliveries)
    orders = [(r.record["w_id"], district, o_id) for r in deliveries
              for district, o_id in enumerate(r.record["delivered"], start=1)]
    assert len(orders) == len(set(orders)) == 10 * len(deliveries)  # none delivered twice
    skipped = {band.name: band for band in report.validity}["skipped_delivery_percent"]
    assert skipped.value == 0.0 and skipped.status == "ok" and skipped.sample >= 10


def test_the_transaction_mode_is_shown_wherever_a_run_is(loaded: Path, tmp_path: Path) -> None:
    """Two runs that differ only in the mode looked alike in `runs`, `show` and the report, and `compare`
    gave the mode's gain as if it were the runs' only difference unseen."""
    results = tmp_path / "r.db"
    for mode in ("client", "server"):
        api.run_benchmark(api.BenchmarkOptions(engine="postgres", workdir=loaded, results=results, terminals=2,
                                               warmup_s=0.5, duration_s=2.0, transactions=mode, check=False))
    maximus = lambda *args: subprocess.run([sys.executable, "-m", "maximus", *args, "--results", str(results)],  # noqa: E731
                                           capture_output=True, text=True, timeout=120, env={**os.environ,
                                                                                              "COLUMNS": "200"})
    listed = maximus("runs").stdout
    assert re.search(r"\b1 .* client-side .*\n.*\b2 .* server-side", listed), listed
    assert "client-side transactions" in maximus("show", "1").stdout
    compared = maximus("compare", "1", "2").stdout
    assert "The runs differ in: transactions client → server" in compared, compared
    assert maximus("compare", "1", "1").stdout.count("differ") == 0
    report = tmp_path / "run.html"
    maximus("report", "--run", "2", "--output", str(report))
    assert "server-side transactions" in report.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="the server runs as another user only when Maximus runs as root")
def test_a_work_directory_the_server_user_cannot_reach_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)  # private, like /root
    workdir = tmp_path / "wd"
    done = subprocess.run([sys.executable, "-m", "maximus", "run", "-e", "postgres", "--workdir", str(workdir),
                           "--results", str(tmp_path / "r.db")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert re.fullmatch(f"error: user postgres cannot reach {re.escape(str(workdir))}/postgres-\\d+ "
                        r"\(a parent directory is private\): choose a --workdir that user can traverse, such as "
                        "/var/tmp/maximus", line), line
    assert not list(workdir.glob("postgres-*"))


def _server_pids(workdir: Path) -> list[int]:
    pid_file = next(workdir.glob("postgres-*/data/postmaster.pid"), None)
    return [int(pid_file.read_text().split()[0])] if pid_file else []


def test_same_seed_gives_the_same_data_as_sqlite(loaded: Path, built_workdir: Path) -> None:
    """The same rows; money is NUMERIC in PostgreSQL (Decimal) and integer cents in SQLite."""
    queries = ["SELECT COUNT(*), SUM(s_quantity), SUM(LENGTH(s_data)) FROM stock",
               "SELECT COUNT(*), SUM(ol_amount), SUM(ol_i_id) FROM order_line",
               "SELECT SUM(i_price), SUM(LENGTH(i_data)) FROM item",
               "SELECT SUM(c_balance), SUM(c_credit_lim), SUM(c_ytd_payment) FROM customer",
               "SELECT SUM(LENGTH(c_data)), SUM(CASE WHEN c_credit = 'BC' THEN 1 ELSE 0 END) FROM customer",
               "SELECT w_ytd, (SELECT SUM(d_ytd) FROM district), (SELECT SUM(h_amount) FROM history) FROM warehouse",
               "SELECT c_first, c_last, c_phone FROM customer WHERE c_w_id = 1 AND c_d_id = 3 AND c_id = 2000"]
    lite = sqlite3.connect(built_workdir / "tpcc-1wh.pristine.sqlite")
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()  # the pristine copy takes no connections: its copy as a run starts from it
        with psycopg.connect(engine._dsn(engine.database)) as pg:
            for query in queries:
                assert [int(v.scaleb(2)) if isinstance(v, Decimal) else v for v in pg.execute(query).fetchone()] == \
                       list(lite.execute(query).fetchone()), query


def test_a_server_left_by_a_killed_maximus_is_found_and_stopped(server_workdir: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    first = PostgresEngine(server_workdir, "leftover", {})
    first.start()  # and never stopped, as if Maximus had been killed
    (old_pid,) = _server_pids(server_workdir)
    second = PostgresEngine(server_workdir, "leftover", {})
    caplog.set_level(logging.INFO, logger="maximus")
    second.start()
    try:
        assert not _process.alive(old_pid)
        assert caplog.messages == [f"stopping the PostgreSQL server {old_pid} that a Maximus which did not finish "
                                   f"left running in {second.server.data_dir}"]  # the CLI prints it as a note
        assert second.server.port != first.server.port or _server_pids(server_workdir) != [old_pid]
        with psycopg.connect(second._dsn("postgres")) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        second.stop()


def test_a_crash_removes_the_segments_that_ended_backends_made_which_only_the_control_segment_names(
        server_workdir: Path, server_with: Callable) -> None:
    """A segment a backend made (a parallel query's) is mapped only while that backend runs: after a crash that
    outlived it (the OOM killer ended it, the server was killed before its restart could remove it) only PostgreSQL's
    control segment names it, and the crash removes it with the rest (a CI run once left one in /dev/shm)."""
    parallel = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; "
                "SELECT count(*) FROM t WHERE pg_sleep(0.01) IS NOT NULL")
    with server_with(server_workdir, "segments", "CREATE TABLE t AS SELECT generate_series(1, 3000) AS n") as engine:
        pid = engine.server_pid()
        assert pid is not None
        control = _process.shared_memory([pid])[0]
        session = engine.connect()
        query = threading.Thread(target=_lost_at_the_crash, args=(session, parallel))
        query.start()
        try:
            deadline = time.monotonic() + 20
            while not (made := _process.shared_memory_files(_process.shared_memory(
                    _process.descendants(pid))[0] - control)) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert made, "the parallel query made no segment of its own"
            os.kill(pid, signal.SIGSTOP)  # the server does not see its processes end, and does not remove theirs
            backends = _process.descendants(pid)
            for backend in backends:
                os.kill(backend, signal.SIGKILL)
            _process.await_ended(backends, 10)
            assert all(path.exists() for path in made)
            assert not set(made) & set(_process.shared_memory_files(_process.shared_memory([pid])[0]))
            engine.server.crash()
            assert not [path for path in made if path.exists()]
        finally:
            if _process.alive(pid):
                _process.kill_tree(pid)
            query.join(10)
            session.close()


def _lost_at_the_crash(session: Any, sql: str) -> None:
    with contextlib.suppress(Exception):  # the server's end
        session.execute(sql)


def test_clients_of_a_managed_server_use_its_unix_socket_or_tcp_when_the_socket_path_is_too_long(
        server_workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = server_workdir / ("d" * 80)  # the socket's path would pass sun_path's 107 bytes
    deep.mkdir()
    deep.chmod(0o755)
    monkeypatch.chdir(server_workdir)  # a relative --workdir, like the default ./maximus-work
    for workdir, client_address in ((Path("."), None), (deep, "127.0.0.1")):
        engine = PostgresEngine(workdir, "postgres", {})
        engine.start()
        try:
            with psycopg.connect(engine._dsn("postgres")) as connection:
                assert connection.execute("SELECT host(inet_client_addr())").fetchone() == (client_address,)
            socket = engine.server.cluster_dir / f".s.PGSQL.{engine.server.port}"
            assert socket.is_socket() == (client_address is None)
            tcp = _tcp_dsn(engine.server.port)
            with psycopg.connect(tcp) as connection:  # TCP loopback still listens, for the user's own tools
                assert connection.execute("SELECT host(inet_client_addr())").fetchone() == ("127.0.0.1",)
        finally:
            engine.stop()


def test_a_prepared_call_sends_nulls_and_arrays_and_raises_errors_with_their_sqlstate(loaded: Path) -> None:
    """The session's cheap path for stored-function calls behaves like a psycopg execute."""
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()
        session = engine.connect()
        text = engine.dialect.call_parameters
        try:
            sql = NewOrder.call_sql
            before = session.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 2")[0]
            session.call(sql, text((1, 2, 7, [5, 6], [1, 1], [3, 4])))
            count, customer, entered = session.fetchone("SELECT o_ol_cnt, o_c_id, o_entry_d FROM orders WHERE "
                                                        "o_w_id = 1 AND o_d_id = 2 AND o_id = ?", (before,))
            assert (count, customer) == (2, 7)
            utc_now = datetime.now(timezone.utc).replace(tzinfo=None)
            assert abs((entered - utc_now).total_seconds()) < 60  # stamped by the server, in UTC, when run
            with pytest.raises(psycopg.Error) as rollback:  # 2.4.2.3: the unused item rolls the order back
                session.call(sql, text((1, 2, 7, [5, 100001], [1, 1], [3, 4])))
            assert rollback.value.sqlstate == "MX001"
            assert session.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 2")[0] == before + 1
            session.call("SELECT tpcc_order_status(?, ?, ?, ?)", text((1, 2, None, "BARBARBAR")))  # a NULL customer id
            with pytest.raises(psycopg.errors.UndefinedFunction):
                session.call("SELECT no_such_function(?)", text((1,)))
        finally:
            session.close()


def _in_both_modes(loaded: Path, change: Callable[[PostgresEngine, Any, str], tuple]) -> dict[str, tuple]:
    """What ``change(engine, session, mode)`` returns in server and in client mode, each on the restored
    pristine database."""
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    changes = {}
    with api.running(engine):
        for mode in ("server", "client"):
            engine.restore()
            session = engine.connect()
            try:
                changes[mode] = change(engine, session, mode)
            finally:
                session.close()
    return changes


def test_a_server_side_new_order_changes_what_the_client_side_one_changes_also_for_an_item_ordered_twice(
        loaded: Path) -> None:
    """The function updates all stock rows in one statement; an item's second line must still count twice."""
    lines = (OrderLine(5, 1, 3), OrderLine(6, 1, 9), OrderLine(5, 1, 8), OrderLine(7, 1, 2), OrderLine(5, 1, 7))
    inputs = NewOrderInput.from_lines(1, 4, 11, lines)
    order_lines = ("SELECT ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info FROM order_line "
                   "WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = 3001 ORDER BY ol_number")
    stock = ("SELECT s_i_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt FROM stock "
             "WHERE s_w_id = 1 AND s_i_id IN (5, 6, 7) ORDER BY s_i_id")

    def new_order(engine: PostgresEngine, session: Any, mode: str) -> tuple:
        before = session.fetchall(stock)
        if mode == "server":
            sql, params = NewOrder(engine.dialect).call(inputs)
            session.call(sql, engine.dialect.call_parameters(params))
        else:
            session.begin()
            NewOrder(engine.dialect).execute(session, inputs)
            session.commit()
        return before, session.fetchall(order_lines), session.fetchall(stock)

    changes = _in_both_modes(loaded, new_order)
    assert changes["server"] == changes["client"]
    before, entered, after = changes["server"]
    assert [row[:4] for row in entered] == [(n, *line) for n, line in enumerate(lines, start=1)]
    assert [row[2:] for row in after] != [row[2:] for row in before]
    assert after[0][2:4] == (before[0][2] + 18, before[0][3] + 3)  # item 5: s_ytd and s_order_cnt, three lines


def test_an_unused_item_rolls_the_new_order_back_and_counts_it_rolled_back_in_both_modes(loaded: Path) -> None:
    """2.4.2.3 through the driver's own runner. A run meets the 1 % of such orders only by chance: a
    1-warehouse run of a few seconds has a few hundred New-Orders, so one in a dozen has none."""
    inputs = NewOrderInput.from_lines(1, 2, 7, (OrderLine(5, 1, 3), OrderLine(6, 1, 2), OrderLine(100001, 1, 4)))
    state = ("SELECT d_next_o_id, (SELECT count(*) FROM orders), (SELECT count(*) FROM new_order), "
             "(SELECT count(*) FROM order_line), (SELECT sum(s_order_cnt) FROM stock WHERE s_w_id = 1) "
             "FROM district WHERE d_w_id = 1 AND d_id = 2")

    def unused_item(engine: PostgresEngine, session: Any, mode: str) -> tuple:
        transaction: Any = NewOrder(engine.dialect)
        given: Any = inputs
        if mode == "server":
            sql, params = transaction.call(inputs)
            transaction, given = ServerSide(transaction, engine.dialect), Call(inputs, sql, params,
                                                                             engine.dialect.call_parameters(params))
        before = session.fetchone(state)
        outcome = transaction_runner(session, engine, RetryPolicy(), transaction)(given)
        return outcome, before, session.fetchone(state)

    for outcome, before, after in _in_both_modes(loaded, unused_item).values():
        assert outcome == (Outcome.ROLLED_BACK, 1, "", None)
        assert after == before


def test_a_server_side_delivery_changes_what_the_client_side_one_changes_and_skips_an_empty_district(
        loaded: Path) -> None:
    """The function delivers all ten districts in one statement; district 3 has no new order left."""
    inputs = DeliveryInput(1, 7)
    queries = ("SELECT no_d_id, min(no_o_id), count(*) FROM new_order WHERE no_w_id = 1 GROUP BY no_d_id ORDER BY 1",
               "SELECT o_d_id, o_id, o_c_id FROM orders WHERE o_w_id = 1 AND o_carrier_id = 7 AND o_id > 2100 "
               "ORDER BY 1, 2",
               "SELECT ol_d_id, ol_o_id, count(*) FROM order_line WHERE ol_w_id = 1 AND ol_o_id > 2100 "
               "AND ol_delivery_d IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
               "SELECT c_d_id, c_id, c_balance FROM customer WHERE c_w_id = 1 AND c_delivery_cnt > 0 ORDER BY 1, 2")

    def delivery(engine: PostgresEngine, session: Any, mode: str) -> tuple:
        session.execute("DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3")
        transaction = Delivery(engine.dialect)
        if mode == "server":  # as the driver runs it: a prepared call, its array of orders read from the text
            sql, params = transaction.call(inputs)
            result = ServerSide(transaction, engine.dialect).execute(
                session, Call(inputs, sql, params, engine.dialect.call_parameters(params)))
        else:
            session.begin()
            result = transaction.execute(session, inputs)
            session.commit()
        return (result, *(session.fetchall(query) for query in queries))

    changes = _in_both_modes(loaded, delivery)
    assert changes["server"] == changes["client"]
    result, new_orders, orders, lines, customers = changes["server"]
    assert result == (1, 7, (2101, 2101, None, *[2101] * 7)) and result.skipped == 1  # 2.7.2.3: the skip recorded
    assert len(orders) == len(customers) == 9 and 3 not in {row[0] for row in orders}
    assert [row[1:] for row in new_orders] == [(2102, 899)] * 9  # 2,101..3,000 loaded: each district's oldest gone
    assert [row[:2] for row in lines] == [row[:2] for row in orders] and all(5 <= row[2] <= 15 for row in lines)


def test_a_stock_update_that_stays_on_its_page_logs_a_few_bytes_not_the_district_columns(loaded: Path) -> None:
    """The columns a New-Order changes are side by side, so the update's WAL record leaves S_DIST_xx out."""
    update = ("UPDATE stock SET s_quantity = s_quantity + 1, s_ytd = s_ytd + 5, s_order_cnt = s_order_cnt + 1, "
              "s_remote_cnt = s_remote_cnt + 1 WHERE s_w_id = 1 AND s_i_id = 42")
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()
        session = engine.connect()
        try:
            session.begin()
            for _ in range(2):  # the first may move the row off its full page; both may log full pages
                session.execute(update)
            before = session.fetchone("SELECT pg_current_wal_insert_lsn()")[0]
            session.execute(update)
            logged = session.fetchone("SELECT pg_current_wal_insert_lsn() - ?::pg_lsn", (str(before),))[0]
            session.rollback()
        finally:
            session.close()
    assert 0 < logged < 150  # 80 bytes on PostgreSQL 15; 336 with S_QUANTITY before the ten S_DIST_xx

def test_a_database_built_by_an_older_maximus_runs_the_functions_of_this_one(loaded: Path) -> None:
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    stock_level = "SELECT tpcc_stock_level(1, 1, 20)"
    with api.running(engine):
        api.prepare_database(engine, ONE_WAREHOUSE, 1)
        session = engine.connect()
        try:
            current = session.fetchone(stock_level)
            session.execute("DROP FUNCTION tpcc_stock_level")  # and another with other parameter names
            session.execute("CREATE FUNCTION tpcc_stock_level(w int, d int, threshold int) RETURNS int "
                            "LANGUAGE sql AS 'SELECT -1'")
            assert session.fetchone(stock_level) == (-1,)
        finally:
            session.close()
        api.prepare_database(engine, ONE_WAREHOUSE, 1, restore=False)
        session = engine.connect()
        try:
            assert session.fetchone(stock_level) == current != (-1,)
        finally:
            session.close()


def test_knobs_are_validated_against_pg_settings_with_units(tmp_path: Path) -> None:
    engine = PostgresEngine(tmp_path, "x", {"shared_buffers": "2GB", "checkpoint_timeout": "15min",
                                            "synchronous_commit": "OFF", "fsync": "true"})
    assert engine.settings == {"shared_buffers": "2GB", "checkpoint_timeout": "15min", "synchronous_commit": "off",
                               "fsync": "on"}
    assert engine.durability_warnings() == ["synchronous_commit=off weakens durability"]
    assert re.fullmatch(r"\d+\.\d+", engine.version())  # e.g. 15.18, not Debian's packaging suffix
    assert engine.knobs.get("shared_buffers").applies == "restart"
    assert engine.knobs.get("work_mem").applies == "reload"
    with pytest.raises(UserError, match="bin_dir chooses the binaries of a managed server"):
        PostgresEngine(tmp_path, "x", {"bin_dir": str(find_bin_dir())}, {"dsn": "host=127.0.0.1"})
    assert PostgresEngine(tmp_path, "x", {"bin_dir": f"{find_bin_dir()}/"}).settings == {"bin_dir": str(find_bin_dir())}
    # names in any case, as PostgreSQL takes them, kept as pg_settings spells them
    assert PostgresEngine(tmp_path, "x", {"Work_Mem": "8MB", "datestyle": "ISO, MDY"}).settings == \
        {"work_mem": "8MB", "DateStyle": "ISO, MDY"}
    with pytest.raises(UserError, match="knob work_mem is set twice"):
        PostgresEngine(tmp_path, "x", {"work_mem": "8MB", "WORK_MEM": "9MB"})
    for name, value, message in [("shared_buffers", "64kB", r"between 16 and 1073741823 \(unit 8kB\), 128kB to 8TB"),
                                 ("checkpoint_timeout", "2d", r"between 30 and 86400 \(unit s\), 30s to 1d"),
                                 ("bin_dir", "/usr/lib", r"no PostgreSQL server binaries \(initdb, pg_ctl, postgres\) "
                                                         "in /usr/lib"),
                                 ("shared_buffers", "2 parsecs", "does not fit"), ("wal_level", "max", "minimal, "),
                                 ("server_version", "16", "unknown postgres knob")]:
        with pytest.raises(UserError, match=message):
            PostgresEngine(tmp_path, "x", {name: value})
    # defaults as postgresql.conf.sample writes them: a step's label once read "shared_buffers 16384 → 1GB"
    defaults = PostgresEngine(tmp_path, "x", {}).effective_settings
    assert [defaults[name] for name in ("shared_buffers", "max_wal_size", "checkpoint_timeout", "work_mem",
                                        "wal_buffers", "commit_delay")] == ["128MB", "1GB", "5min", "4MB", "-1", "0"]
    path = tmp_path / "buffers.toml"
    path.write_text('name = "b"\nengine = "postgres"\n[[steps]]\nname = "buffers"\nset = { shared_buffers = "1GB" }\n')
    assert load_experiment(path).steps[1].replaced == {"shared_buffers": "128MB"}


VERSIONS_EXPERIMENT = """\
name = "versions"
engine = "postgres"
clients = [1]
repeats = 1
[workload]
warmup = 0.2
duration = 0.5
[[steps]]
name = "the other installation"
set = {{ bin_dir = "{other}" }}
"""


def test_two_installations_are_two_steps_of_an_experiment(server_workdir: Path, tmp_path: Path) -> None:
    """bin_dir is a knob like any other: a step that changes it runs its server from the other installation
    (here the same binaries under another directory, whose pg_ctl notes each call)."""
    installed = find_bin_dir()
    other = server_workdir / "other-installation"
    other.mkdir()
    for binary in installed.iterdir():
        (other / binary.name).symlink_to(binary)
    calls = other / "pg_ctl-calls"
    calls.touch(mode=0o666)
    calls.chmod(0o666)
    (other / "pg_ctl").unlink()
    (other / "pg_ctl").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {installed}/pg_ctl "$@"\n')
    (other / "pg_ctl").chmod(0o755)
    path = tmp_path / "versions.toml"
    path.write_text(VERSIONS_EXPERIMENT.format(other=other))
    experiment = load_experiment(path)
    assert experiment.steps[1].replaced == {"bin_dir": str(installed)}
    results = tmp_path / "r.db"
    experiment_id = runner.start(path, server_workdir / "work", results, Quiet())
    store = api.open_results(results)
    runs = {run.plan_key: store.run(run.id) for run in store.runs(experiment_id)}
    store.close()
    assert {key: run.status for key, run in runs.items()} == {"s0/c1/r1": RunStatus.COMPLETE,
                                                               "s1/c1/r1": RunStatus.COMPLETE}
    assert runs["s0/c1/r1"].effective_knobs["bin_dir"] == str(installed) and runs["s0/c1/r1"].spec.knobs == {}
    assert runs["s1/c1/r1"].spec.knobs == {"bin_dir": str(other)} == \
        {"bin_dir": runs["s1/c1/r1"].effective_knobs["bin_dir"]}
    data_dir = server_workdir / "work" / f"postgres-{installed.parent.name}" / "data"
    started = [line for line in calls.read_text().splitlines() if f"-D {data_dir} " in line and "start" in line]
    assert len(started) == 1, calls.read_text()  # the step's run, once: its check after the run restarts nothing
    with pytest.raises(UserError, match=r"steps\[0\]\.set.*bad value '/nowhere' for knob bin_dir: no PostgreSQL "
                                        r"server binaries \(initdb, pg_ctl, postgres\) in /nowhere"):
        path.write_text(VERSIONS_EXPERIMENT.format(other="/nowhere"))
        load_experiment(path)


CARRIED_EXPERIMENT = """\
name = "carried"
engine = "postgres"
clients = [1]
[baseline]
vacuum_defer_cleanup_age = 10
[[steps]]
name = "the other version"
set = {{ bin_dir = "{other}" }}
"""


def test_a_knob_kept_into_a_step_of_another_version_is_validated_by_that_version(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A baseline knob that the step's installation does not have fails the file's validation, not the
    step's runs. The other installation is these binaries under another directory whose ``postgres``
    says it is 15.99; its catalogue, cached per version as for any installation, lacks the baseline's knob,
    as PostgreSQL 16's lacks vacuum_defer_cleanup_age."""
    from maximus.engines.postgres.managed import installation_settings
    from maximus.engines.postgres.settings import full_version

    installed = find_bin_dir()
    rows = installation_settings("")
    other = tmp_path / "other-installation"
    other.mkdir()
    for binary in installed.iterdir():
        (other / binary.name).symlink_to(binary)
    (other / "postgres").unlink()
    (other / "postgres").write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "postgres (PostgreSQL) 15.99"; '
                                    f'exit 0; }}\nexec {installed}/postgres "$@"\n')
    (other / "postgres").chmod(0o755)
    cache = tmp_path / "cache" / "maximus"
    cache.mkdir(parents=True)
    (cache / f"pg_settings-{full_version(installed)}.json").write_text(json.dumps(list(rows)))
    (cache / "pg_settings-15.99.json").write_text(
        json.dumps([row for row in rows if row["name"] != "vacuum_defer_cleanup_age"]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "carried.toml"
    path.write_text(CARRIED_EXPERIMENT.format(other=other))
    with pytest.raises(UserError, match=r"carried.toml:8: steps\[0\]\.set: vacuum_defer_cleanup_age = 10, kept "
                                        r"from an earlier step, is not a setting of this step's postgres server"):
        load_experiment(path)
    path.write_text(CARRIED_EXPERIMENT.format(other=other).replace("vacuum_defer_cleanup_age = 10", "work_mem = 640"))
    assert load_experiment(path).steps[1].knobs == {"work_mem": "640", "bin_dir": str(other)}


def test_external_mode_changes_knobs_only_when_allowed(loaded: Path) -> None:
    managed = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    managed.start()
    try:
        dsn = _tcp_dsn(managed.server.port)
        with pytest.raises(UserError, match="--allow-changes"):
            PostgresEngine(loaded, "x", {"work_mem": "16MB"}, {"dsn": dsn}).start()
        with pytest.raises(UserError, match=r"only with --allow-restart \(ALTER SYSTEM \+ restart\)"):
            PostgresEngine(loaded, "x", {"work_mem": "16MB", "shared_buffers": "1GB"}, {"dsn": dsn}).start()
        with pytest.raises(UserError, match="shared_buffers takes effect only after a restart: allow Maximus to "
                                            "restart your server with --allow-restart"):
            PostgresEngine(loaded, "x", {"shared_buffers": "1GB"}, {"dsn": dsn, "allow_changes": "yes"}).start()
        with psycopg.connect(dsn, autocommit=True) as connection:  # the user's own ALTER SYSTEM, kept after us
            connection.execute("ALTER SYSTEM SET work_mem = '6MB'")
            connection.execute("SELECT pg_reload_conf()")
        external = PostgresEngine(loaded, "tpcc-1wh", {"work_mem": "16MB", "temp_buffers": "2MB"},
                                  {"dsn": dsn, "allow_changes": "yes"})
        external.start()
        assert _shown_once_reloaded(dsn, "work_mem", "16MB") and _shown_once_reloaded(dsn, "temp_buffers", "2MB")
        assert external.has_snapshot() and external.data_path() == loaded
        assert managed.manages_server and not external.manages_server and external.lock_target() is None
        external.stop()
        assert _shown_once_reloaded(dsn, "work_mem", "6MB") and _shown_once_reloaded(dsn, "temp_buffers", "8MB")
        with psycopg.connect(dsn, autocommit=True) as connection:
            auto_conf = connection.execute("SELECT name, setting FROM pg_file_settings WHERE sourcefile LIKE "
                                           "'%/postgresql.auto.conf'").fetchall()
            connection.execute("ALTER SYSTEM RESET work_mem")
        assert auto_conf == [("work_mem", "6MB")]
    finally:
        managed.stop()


def test_external_mode_restarts_a_server_on_this_machine_when_allowed_and_again_to_put_it_back(
        loaded: Path, caplog: pytest.LogCaptureFixture) -> None:
    users = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    users.start()  # the user's server, started with pg_ctl
    try:
        dsn = _tcp_dsn(users.server.port)
        allowed = {"dsn": dsn, "allow_changes": "yes", "allow_restart": "yes"}
        first_pid = _server_pids(loaded)
        external = PostgresEngine(loaded, "tpcc-1wh", {"shared_buffers": "48MB", "work_mem": "5MB"}, allowed)
        caplog.set_level(logging.INFO, logger="maximus")
        external.start()
        assert _shown_once_reloaded(dsn, "shared_buffers", "48MB") and _shown_once_reloaded(dsn, "work_mem", "5MB")
        assert _server_pids(loaded) != first_pid and external.effective_settings["shared_buffers"] == "48MB"
        external.stop()
        restart = f"then a restart (fast shutdown) of {users.server.data_dir}"  # what the CLI prints as notes
        assert caplog.messages == [f"your PostgreSQL server: ALTER SYSTEM SET shared_buffers=48MB, SET work_mem=5MB, "
                                   f"{restart}", f"your PostgreSQL server: ALTER SYSTEM RESET shared_buffers, "
                                   f"RESET work_mem, {restart}"]
        assert _shown_once_reloaded(dsn, "shared_buffers", "128MB") and _shown_once_reloaded(dsn, "work_mem", "4MB")
        auto_conf = users.server.data_dir / "postgresql.auto.conf"
        assert "shared_buffers" not in auto_conf.read_text()
        refused = PostgresEngine(loaded, "tpcc-1wh", {"shared_buffers": "900GB"}, allowed)
        with pytest.raises(EngineError, match=r"^PostgreSQL would not restart with shared_buffers=900GB \(could not "
                                              r"map anonymous shared memory.*\): it runs again with the configuration"):
            refused.start()
        assert _shown_once_reloaded(dsn, "shared_buffers", "128MB")  # back up, as it was
        assert "shared_buffers" not in auto_conf.read_text()
        refused.stop()  # nothing of its own to put back
        assert (users.server.cluster_dir / "server.log").read_text().count("database system is ready") >= 4  # one log
    finally:
        users.stop()
    assert _server_pids(loaded) == []


def test_a_configuration_put_back_that_will_not_start_leaves_the_server_up_with_the_runs_knob_and_says_so(
        loaded: Path, tmp_path: Path) -> None:
    """The user's own ALTER SYSTEM SET shared_buffers = '900GB' waits for a restart; the run's restarts come
    first, and putting the user's value back is the restart that fails, after the run was stored."""
    users = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    users.start()
    try:
        dsn = _tcp_dsn(users.server.port)
        with psycopg.connect(dsn, autocommit=True) as connection:
            connection.execute("ALTER SYSTEM SET shared_buffers = '900GB'")  # pending: no restart yet
        options = api.BenchmarkOptions(engine="postgres", workdir=loaded, results=tmp_path / "r.db", terminals=1,
                                       warmup_s=0.2, duration_s=0.5, check=False, monitor=False,
                                       knobs={"shared_buffers": "48MB"},
                                       connection={"dsn": dsn, "allow_changes": "yes", "allow_restart": "yes"})
        with pytest.raises(EngineError, match=r"^PostgreSQL would not restart with the configuration put back "
                                              r"\(shared_buffers=900GB\) \(could not map anonymous shared memory.*\): "
                                              r"it runs again with the run's shared_buffers=48MB, which stays in "
                                              r"postgresql.auto.conf until you ALTER SYSTEM SET or RESET it "
                                              r"\(run 1 is stored: `maximus show 1`\)$"):
            api.run_benchmark(options)
        assert _shown_once_reloaded(dsn, "shared_buffers", "48MB")  # up, as the message says
        with psycopg.connect(dsn, autocommit=True) as connection:
            assert connection.execute("SELECT setting FROM pg_file_settings WHERE name = 'shared_buffers' AND "
                                      "sourcefile LIKE '%/postgresql.auto.conf'").fetchall() == [("48MB",)]
            connection.execute("ALTER SYSTEM RESET shared_buffers")
    finally:
        users.stop()
    store = api.open_results(tmp_path / "r.db")
    record = store.run(1)
    store.close()
    assert record.status is RunStatus.COMPLETE and record.effective_knobs["shared_buffers"] == "48MB"


@pytest.mark.skipif(not _process.running_as_root() or shutil.which("unshare") is None,
                    reason="a mount namespace of its own needs root and unshare (util-linux)")
def test_external_mode_refuses_to_restart_a_server_whose_data_directory_is_not_on_this_machine(tmp_path: Path) -> None:
    """A server in a container: reachable on loopback, its data directory in a mount namespace of its own,
    where this machine's directory of that name is empty."""
    hidden = Path(tempfile.mkdtemp(prefix="maximus-test-elsewhere-", dir="/var/tmp"))
    hidden.chmod(0o755)
    port, bin_dir = _process.free_port(), find_bin_dir()
    as_postgres = "runuser -u postgres --"
    started = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-ec",
         f"mount -t tmpfs tmpfs {hidden}; chmod 755 {hidden}; chown postgres {hidden}\n"
         f"{as_postgres} {bin_dir}/initdb -D {hidden}/data -U postgres -A trust >/dev/null\n"
         f"{as_postgres} {bin_dir}/pg_ctl -D {hidden}/data -l {hidden}/log -w -o '-p {port} -k {hidden}' start "
         f">/dev/null\nhead -n 1 {hidden}/data/postmaster.pid"],
        capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    postmaster = int(started.stdout)
    try:
        dsn = _tcp_dsn(port)
        with psycopg.connect(dsn) as connection:
            assert connection.execute("SHOW data_directory").fetchone() == (f"{hidden}/data",)
        assert not (hidden / "data").exists()  # here, an empty directory of that name
        allowed = {"dsn": dsn, "allow_changes": "yes", "allow_restart": "yes"}
        with pytest.raises(UserError, match=rf"^cannot restart the server: its data directory {hidden}/data is not "
                                            r"on this machine \(or not readable\)$"):
            PostgresEngine(tmp_path, "tpcc-1wh", {"shared_buffers": "48MB"}, allowed).start()
        with psycopg.connect(dsn) as connection:  # untouched: no ALTER SYSTEM before the refusal
            assert connection.execute("SELECT count(*) FROM pg_file_settings WHERE sourcefile LIKE "
                                      "'%/postgresql.auto.conf'").fetchone() == (0,)
            assert connection.execute("SHOW shared_buffers").fetchone() == ("128MB",)
    finally:
        os.kill(postmaster, signal.SIGINT)  # a fast shutdown; its tmpfs goes with its namespace
        deadline = time.monotonic() + 60
        while _process.alive(postmaster) and time.monotonic() < deadline:
            time.sleep(0.05)
        hidden.rmdir()
    assert not _process.alive(postmaster)


def test_a_server_run_by_a_system_service_is_told_from_one_started_in_a_login_session() -> None:
    assert system_service_in("0::/system.slice/system-postgresql.slice/postgresql@15-main.service\n") \
        == "postgresql@15-main.service"
    assert system_service_in("0::/system.slice/postgresql-15.service\n") == "postgresql-15.service"
    assert system_service_in("0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n") == ""
    assert system_service_in("0::/user.slice/user-1000.slice/session-3.scope\n") == ""
    assert system_service_in("9:name=systemd:/\n0::/\n") == ""


def _tcp_dsn(port: int) -> str:
    """How a user's tools reach a server on loopback: the DSN an external-mode run is given."""
    return f"host=127.0.0.1 port={port} user=postgres dbname=postgres"


def _shown_once_reloaded(dsn: str, name: str, value: str) -> bool:
    """Whether a new session shows ``value`` within 5 s: a reload reaches the server a moment after the call."""
    deadline = time.monotonic() + 5
    while True:
        with psycopg.connect(dsn, autocommit=True) as connection:
            if connection.execute(f"SHOW {name}").fetchone() == (value,):
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_a_run_on_a_server_of_the_users_records_its_settings_and_warns_of_its_durability(
        loaded: Path, tmp_path: Path) -> None:
    """The server's own configuration, not PostgreSQL's defaults, is what the run records and warns about."""
    users = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {"synchronous_commit": "off", "work_mem": "12MB"})
    users.start()  # stands for a server the user configured: Maximus's external run knows nothing of this
    try:
        dsn = _tcp_dsn(users.server.port)
        options = api.BenchmarkOptions(engine="postgres", workdir=loaded, results=tmp_path / "r.db", terminals=1,
                                       warmup_s=0.2, duration_s=0.5, check=False, monitor=False,
                                       connection={"dsn": dsn})
        outcome = api.run_benchmark(options)
        port = users.server.port
    finally:
        users.stop()
    store = api.open_results(tmp_path / "r.db")
    record = store.run(outcome.run_id)
    store.close()
    assert record.spec.knobs == {}
    assert record.effective_knobs["synchronous_commit"] == "off"
    assert record.effective_knobs["work_mem"] == "12MB"  # pg_settings' 12288 kB, spelled as the defaults are
    assert record.effective_knobs["shared_buffers"] == "128MB"  # the server's 16384 pages, not a knob of the run
    assert record.effective_knobs["port"] == str(port)
    assert "synchronous_commit=off weakens durability" in record.warnings
    assert record.engine_settings["synchronous_commit"] == "off"
    assert record.engine_settings["shared_buffers"] == "128MB"  # as SHOW spells it
    console = Console(record=True, width=400)
    render_header(console, record, Tpcc().presentation(Tpcc().settings(record.spec.settings)))
    header = console.export_text()
    assert "Knobs set by the run: none" in header and "Server reported: server_version=" in header
    assert re.search(r"^Run \d+ · postgres \d+\.\d+ · ", header)  # the server's version, as a managed run's
    assert "synchronous_commit=off" in header and "lc_monetary" not in header  # not the hundreds of others


def test_a_server_that_will_not_start_is_one_line_with_exit_code_3(tmp_path: Path, server_workdir: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "maximus", "run", "-e", "postgres", "-k", "shared_buffers=900GB",
                             "--workdir", str(server_workdir), "--results", str(tmp_path / "r.db"), "--duration", "1"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 3
    assert result.stderr.startswith("error: PostgreSQL would not start: could not map anonymous shared memory")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    with pytest.raises(EngineError):
        api.make_engine("postgres", server_workdir, ONE_WAREHOUSE, {}).connect()


def test_ctrl_c_during_a_parallel_build_is_one_line_and_leaves_no_loader_or_server(server_workdir: Path) -> None:
    """A terminal's Ctrl-C reaches the whole process group: the loader processes printed a traceback each
    and Maximus said nothing (typer turns a KeyboardInterrupt into a silent exit code 130)."""
    process = subprocess.Popen([sys.executable, "-m", "maximus", "load", "-e", "postgres", "--warehouses", "8",
                                "--workdir", str(server_workdir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, preexec_fn=default_dispositions)
    deadline, loaders = time.monotonic() + 60, []
    while time.monotonic() < deadline and process.poll() is None and len(loaders) < 2:
        loaders = worker_processes(_process.descendants(process.pid))
        time.sleep(0.05)
    seen = {pid: _process.command_line(pid)[:100] for pid in _process.descendants(process.pid)}
    assert len(loaders) == 2, f"no loader processes seen: {seen}"  # one per core: warehouses go in from both
    time.sleep(1.0)  # the loaders generate and COPY
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert (process.returncode, stderr) == (130, "error: interrupted\n")
    assert not [pid for pid in loaders if _process.alive(pid)] and _server_pids(server_workdir) == []


def test_ctrl_c_during_the_index_phase_cancels_the_index_builds_under_way(server_workdir: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The tables not begun were dropped, but leaving the thread pool waited for the index builds under way,
    each minutes long at 100 warehouses. Here every table's "index build" is a 20-s sleep."""
    slow = "SELECT pg_sleep(20)"
    monkeypatch.setattr(schema, "index_statements_by_table", lambda dialect: {t.name: [slow] for t in schema.TABLES})
    engine = api.make_engine("postgres", server_workdir, ONE_WAREHOUSE, {}, database="interrupted_indexes")
    sleeping = "SELECT count(*) FROM pg_stat_activity WHERE query = %s AND state = 'active'"
    at_once = min(2, os.cpu_count() or 1)  # the loader's sessions: one per core
    main, sent = threading.main_thread().ident, []

    def interrupt_once_they_sleep() -> None:
        with psycopg.connect(engine._dsn("postgres"), autocommit=True) as watcher:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if watcher.execute(sleeping, (slow,)).fetchone()[0] == at_once:
                    sent.append(time.monotonic())
                    signal.pthread_kill(main, signal.SIGINT)  # as a terminal's Ctrl-C reaches the main thread
                    return
                time.sleep(0.05)

    with api.running(engine), psycopg.connect(engine._dsn("postgres"), autocommit=True) as admin:
        threading.Thread(target=interrupt_once_they_sleep, daemon=True).start()
        with keyboard_interrupts(), pytest.raises(KeyboardInterrupt):
            api.load_database(engine, ONE_WAREHOUSE, seed=1)
        assert sent and time.monotonic() - sent[0] < 5  # not the 20 s of the sleeps under way
        assert admin.execute(sleeping, (slow,)).fetchone()[0] == 0  # stopped on the server, not left to run
        assert not [t for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor")]
        engine.destroy()


def test_load_keeps_the_build_as_the_pristine_copy_and_leaves_a_working_copy_that_check_passes() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="maximus-test-load-", dir="/var/tmp"))
    workdir.chmod(0o755)

    def maximus(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "maximus", *args, "-e", "postgres", "--workdir", str(workdir)],
                              capture_output=True, text=True, timeout=240)

    def check_passes_all_twelve() -> str:
        checked = maximus("check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert checked.stdout.count("pass") == 13  # a fresh load: condition 11 applies too; and amcheck
        return checked.stdout

    try:
        loaded = maximus("load", "--warehouses", "1")
        assert loaded.returncode == 0, loaded.stdout + loaded.stderr
        engine = api.make_engine("postgres", workdir, ONE_WAREHOUSE, {})
        with api.running(engine):
            assert engine.exists() and engine.has_snapshot()
        assert "pristine copy" not in check_passes_all_twelve()
        with api.running(engine), psycopg.connect(engine._dsn("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{engine.database}"')  # as a load stopped before its working copy
        assert "checking its pristine copy, restored" in check_passes_all_twelve()
    finally:
        # a CLI that timed out left its server
        api.make_engine("postgres", workdir, ONE_WAREHOUSE, {}).server.stop_leftover()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_build_renames_the_database_it_loaded_into_the_pristine_copy_without_a_checkpoint(
        server_workdir: Path) -> None:
    engine = PostgresEngine(server_workdir, "rename_probe", {})
    engine.start()
    try:
        engine.provision()
        session = engine.connect()
        session.execute("CREATE TABLE t AS SELECT g FROM generate_series(1, 1000) AS g")
        session.close()
        with psycopg.connect(engine._dsn("postgres"), autocommit=True) as admin:
            checkpoints = "SELECT checkpoints_req + checkpoints_timed FROM pg_stat_bgwriter"
            before = admin.execute(checkpoints).fetchone()
            engine.keep_as_pristine()
            assert admin.execute(checkpoints).fetchone() == before  # a copy would have forced one
        assert not engine.exists() and engine.has_snapshot()
        engine.restore()
        session = engine.connect()
        assert session.fetchone("SELECT count(*) FROM t") == (1000,)
        session.close()
        engine.destroy()
    finally:
        engine.stop()


def test_autovacuum_leaves_the_pristine_copy_alone_also_one_kept_by_an_older_maximus(server_workdir: Path) -> None:
    """Every table of a pristine copy is freshly loaded, which is what autovacuum's insert threshold looks
    for: it vacuumed the pristine copy during the first run after a build, and the runs after it restored
    another copy (hint bits and visibility map set) than the first."""
    knobs = {"autovacuum_naptime": "1", "log_autovacuum_min_duration": "0"}
    engine = api.make_engine("postgres", server_workdir, ONE_WAREHOUSE, knobs, database="autovacuum_probe")
    log = engine.server.cluster_dir / "server.log"

    def vacuumed(database: str, table: str = "") -> bool:
        return f'automatic vacuum of table "{database}.public.{table}' in log.read_text(errors="replace")

    with api.running(engine), psycopg.connect(engine._dsn("postgres"), autocommit=True) as admin:
        api.load_database(engine, ONE_WAREHOUSE, seed=1)
        admin.execute("DROP TABLE IF EXISTS vacuum_me")  # a table autovacuum must vacuum: it is at work
        admin.execute("CREATE TABLE vacuum_me AS SELECT g FROM generate_series(1, 5000) AS g")
        deadline = time.monotonic() + 60
        while not vacuumed("postgres", "vacuum_me") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert vacuumed("postgres", "vacuum_me")
        time.sleep(3)  # three more rounds of the launcher over every database
        assert not vacuumed(engine.pristine)

        admin.execute(f'ALTER DATABASE "{engine.pristine}" WITH ALLOW_CONNECTIONS true')  # as an older Maximus kept it
        engine.restore()
        taking = "SELECT datallowconn FROM pg_database WHERE datname = %s"
        assert admin.execute(taking, (engine.pristine,)).fetchone() == (False,)
        assert admin.execute(taking, (engine.database,)).fetchone() == (True,)  # the copy a run restores
        admin.execute("DROP TABLE vacuum_me")
        engine.destroy()


def test_many_keyed_terminals_share_a_few_processes(loaded: Path, tmp_path: Path) -> None:
    """Asynchronous terminals: 60 keyed terminals with think times in one process per core."""
    options = api.BenchmarkOptions(engine="postgres", workdir=loaded, results=tmp_path / "r.db", terminals=60,
                                   warmup_s=0.5, duration_s=5.0, settings={"keying": True}, transactions="server")
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    from maximus.workloads.tpcc.emulator import TpccRunSettings
    from maximus.workloads.tpcc.random import NURandConstants

    settings = TpccRunSettings(1, 1, NURandConstants.for_run(0, 1), keying_and_think=True, server_side=True)
    assert api.terminal_hosting(engine, settings, 60) == ("asyncio", 30)  # two cores: two processes of 30
    outcome = api.run_benchmark(options)
    assert outcome.status.value == "complete", outcome.result.errors
    assert all(r.passed is not False for r in outcome.consistency)
    failed = [s for s in outcome.result.samples if s.outcome is Outcome.FAILED]
    assert not failed, failed[:3]
    started = {s.terminal for s in outcome.result.samples}
    assert len(started) >= 20  # keying times of 2 s let many terminals finish a first transaction in 5.5 s
    assert max(s.start for s in outcome.result.samples if not s.transaction.startswith("deferred")) >= 2.0


def test_an_asynchronous_session_runs_every_transactions_call_with_the_parameters_as_drawn(loaded: Path) -> None:
    """The keyed terminals' path (driver.async_terminal): each call goes through psycopg with its parameters
    adapted, not as text, so New-Order's item, supply and quantity arrays must be lists. A keyed New-Order
    takes 18 s of keying, too long for the keyed run above to reach one."""
    from maximus.workloads import workload
    from maximus.workloads.tpcc.constants import UNUSED_ITEM_ID
    from maximus.workloads.tpcc.emulator import TpccRunSettings
    from maximus.workloads.tpcc.random import NURandConstants

    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    emulator = workload("tpcc").emulator(TpccRunSettings(1, 1, NURandConstants.for_run(0, 1), server_side=True), 0,
                                         engine.dialect)
    calls = {name: transaction.draw(emulator.rng, emulator.home) for name, transaction in emulator.transactions.items()}
    while UNUSED_ITEM_ID in calls["new_order"].inputs.item_ids:  # not the 1 % that rolls back by rule
        calls["new_order"] = emulator.transactions["new_order"].draw(emulator.rng, emulator.home)
    next_order = "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?"

    async def run_each() -> None:
        session = await engine.connect_async()
        try:
            for name, call in calls.items():
                await session.execute(*emulator.transactions[name].statement(call))
        finally:
            await session.close()

    with api.running(engine):
        engine.restore()
        check = engine.connect()
        try:
            district = (calls["new_order"].inputs.w_id, calls["new_order"].inputs.d_id)
            before = check.fetchone(next_order, district)[0]
            asyncio.run(run_each())
            assert check.fetchone(next_order, district)[0] == before + 1
        finally:
            check.close()


def test_busy_terminals_share_a_process_per_core_and_client_side_ones_get_their_own(tmp_path: Path) -> None:
    from maximus.workloads.tpcc.emulator import TpccRunSettings
    from maximus.workloads.tpcc.random import NURandConstants

    engine = api.make_engine("postgres", tmp_path, ONE_WAREHOUSE, {})
    constants = NURandConstants.for_run(0, 1)
    cores = os.cpu_count() or 1
    busy = TpccRunSettings(1, 1, constants, server_side=True)
    assert api.terminal_hosting(engine, busy, 8) == ("multiplexed", -(-8 // min(8, cores)))
    assert api.terminal_hosting(engine, busy, 1) == ("multiplexed", 1)
    assert api.terminal_hosting(engine, TpccRunSettings(1, 1, constants), 8) == ("process", 1)


def test_the_catalogue_comes_from_a_throwaway_cluster_when_nothing_is_cached() -> None:
    """The path a fresh machine takes: no cached pg_settings, so a scratch cluster is started and read."""
    from maximus.engines.postgres.managed import settings_from_throwaway_cluster

    rows = {row["name"]: row for row in settings_from_throwaway_cluster(find_bin_dir())}
    assert rows["shared_buffers"]["unit"] == "8kB" and rows["shared_buffers"]["context"] == "postmaster"
    assert "minimal" in rows["wal_level"]["enumvals"]


def test_the_catalogue_cache_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from maximus.engines.server import cache_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "maximus"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "maximus"


def test_a_stall_of_the_server_at_a_fixed_rate_shows_in_latency_and_not_in_service_time(loaded: Path,
                                                                                       tmp_path: Path) -> None:
    """Issue #45: a SIGSTOP of every server process for 1.5 s in a fixed-rate run: every transaction the stall held
    back has a latency (from its intended start) of up to the stall, but only those it met take that long to serve;
    the backlog drains after it, so the rate is still sustained. The closed-loop run of the same stall hides it in
    one transaction per terminal."""
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    held_back = {}
    for rate in (40.0, None):
        stall = Stall(engine.server_pid, at=1.5, seconds=1.5)
        try:
            outcome = api.run_benchmark(api.BenchmarkOptions(
                engine="postgres", workdir=loaded, results=tmp_path / "r.db", terminals=2, warmup_s=0.5,
                duration_s=4.0, monitor=False, rate=rate), observer=stall)
        finally:
            stall.resume()
        assert outcome.status is RunStatus.COMPLETE and stall.stopped
        timed = [s for s in outcome.result.samples  # the terminals' own: a deferred worker is no terminal
                 if s.outcome is not Outcome.FAILED and 0.5 <= s.start and not s.transaction.startswith("deferred_")]
        held_back[rate] = (sum(1 for s in timed if s.scheduled_latency > 0.5),
                           sum(1 for s in timed if s.latency > 0.5))
        if rate:
            store = api.open_results(tmp_path / "r.db")
            rate_figures = api.analyse_run(store, outcome.run_id).rate
            store.close()
            assert rate_figures is not None and rate_figures.sustained, rate_figures
            assert max(dict(rate_figures.backlog).values()) >= 30
    latency, service = held_back[40.0]
    assert latency >= 25 and service <= 2  # held back over 0.5 s: about 1 s x 40/s; met by the stall: one a terminal
    assert held_back[None][0] == held_back[None][1] <= 2  # closed loop: the stall is one slow transaction a terminal
