"""MariaDB's split calls under the pumps of engines/pump.py, against a real server: the pump in Python
(send_call / call_finished) and the engine's own in C over libmariadb (_mariadb_pump.c) behave alike. Busy
server-side terminals share a process per core, a call in flight on each, as PostgreSQL's do."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Callable, Iterator

import pytest
from MySQLdb import _mysql

from maximus import api
from maximus.engines.mariadb import MariaDBEngine, MariaDBSession
from maximus.engines.mariadb.pump import MariaDBPump
from maximus.engines.mariadb.literals import call_parameters
from maximus.engines.pump import DONE, FAILED, Pump, PythonPump
from maximus.workloads.tpcc.emulator import TpccRunSettings
from maximus.workloads.tpcc.random import NURandConstants
from maximus.workloads.tpcc.server_side import ROLLBACK_SQLSTATE

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})
SETUP = ("CREATE TABLE IF NOT EXISTS counted (n INT PRIMARY KEY AUTO_INCREMENT)",
         "DROP FUNCTION IF EXISTS count_one",
         "CREATE FUNCTION count_one() RETURNS INT MODIFIES SQL DATA "
         "BEGIN INSERT INTO counted VALUES (NULL); RETURN LAST_INSERT_ID(); END",
         "DROP FUNCTION IF EXISTS fail_by_rule",
         f"CREATE FUNCTION fail_by_rule() RETURNS INT BEGIN SIGNAL SQLSTATE '{ROLLBACK_SQLSTATE}' "
         "SET MESSAGE_TEXT = 'Item number is not valid'; RETURN 0; END")
COUNT = ("SELECT count_one()", ())


def _call(sql: str, *params: object) -> tuple[str, tuple[bytes, ...]]:
    return sql, call_parameters(params)


@pytest.fixture(scope="module")
def engine(server_workdir: Path) -> Iterator[MariaDBEngine]:
    """A managed server with an empty database: the pump needs no TPC-C data."""
    engine = api.make_engine("mariadb", server_workdir, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.provision()
        session = engine.connect()
        try:
            for statement in SETUP:
                session.execute(statement)
        finally:
            session.close()
        yield engine


@pytest.fixture
def pump(make_pump: Callable[[MariaDBEngine], Pump], engine: MariaDBEngine) -> Pump:
    return make_pump(engine)


@pytest.fixture
def sessions(engine: MariaDBEngine) -> Iterator[list[MariaDBSession]]:
    opened = [engine.connect() for _ in range(3)]
    yield opened
    for session in opened:
        session.close()


def _counted(session: MariaDBSession) -> int:
    return session.fetchone("SELECT COUNT(*) FROM counted")[0]


def _until_events(pump: Pump, events: list, wanted: int = 1) -> list:
    deadline = time.monotonic() + 10
    while len(events) < wanted and time.monotonic() < deadline:
        events += pump.wait(1.0)
    return events


def _until_idle(pump: Pump) -> list:
    events, deadline = [], time.monotonic() + 10
    while pump.in_flight() and time.monotonic() < deadline:
        events += pump.wait(1.0)
    return events


def test_the_engine_sends_its_calls_with_the_c_pump_over_mysqlclients_libmariadb(engine: MariaDBEngine) -> None:
    assert isinstance(engine.call_pump(), MariaDBPump), \
        "maximus.engines._mariadb_pump was not compiled: pip install -e . needs a C compiler (docs/mariadb.md)"


def test_busy_server_side_terminals_share_a_process_per_core(engine: MariaDBEngine) -> None:
    busy = TpccRunSettings(1, 1, NURandConstants.for_run(0, 1), server_side=True)
    cores = os.cpu_count() or 1
    assert api.terminal_hosting(engine, busy, 8) == ("multiplexed", -(-8 // min(8, cores)))


def test_a_slot_runs_its_calls_in_order_and_times_each(pump: Pump, sessions: list[MariaDBSession]) -> None:
    slot = pump.add(sessions[0])
    before = _counted(sessions[2])
    began = time.monotonic()
    [(found_slot, kind, index, times, error)] = _until_events(pump, pump.give(slot, [COUNT] * 5, 0,
                                                                              time.monotonic() + 60))
    assert (found_slot, kind, index, error) == (slot, DONE, 5, None)
    assert len(times) == 10 and times == sorted(times) and began <= times[0] and times[-1] <= time.monotonic()
    assert _counted(sessions[2]) == before + 5 and pump.in_flight() == 0


def test_a_session_call_returns_what_the_server_sent(sessions: list[MariaDBSession]) -> None:
    assert sessions[0].call(*_call("SELECT CONCAT(?, ?, ?)", "a'b", 7, [1, 2])) == "a'b7[1,2]"
    assert sessions[0].call(*_call("SELECT count_one()")) == sessions[0].fetchone("SELECT MAX(n) FROM counted")[0]


def test_the_server_reads_the_literals_back_as_the_values(sessions: list[MariaDBSession]) -> None:
    values = ([0, -1, 2**63 - 1, -2**63], "é€ ünï", "a'b\\c\"\n\r\x1a\x00z", -7, 2**63 - 1, Decimal("12.30"), 1.5,
              datetime(2024, 5, 1, 12, 0, 0, 123456), None)
    array = sessions[0].call(*_call("SELECT JSON_ARRAY(" + ", ".join(["?"] * len(values)) + ")", *values))
    assert json.loads(array) == ["[0,-1,9223372036854775807,-9223372036854775808]", "é€ ünï",
                                 "a'b\\c\"\n\r\x1a\x00z", -7, 2**63 - 1, 12.3, 1.5, "2024-05-01 12:00:00.123456", None]


def test_the_literals_hold_on_a_server_whose_sql_mode_has_no_backslash_escapes(engine: MariaDBEngine) -> None:
    """The literals are written with backslash escapes (as mysql_escape_string writes them): a session drops
    NO_BACKSLASH_ESCAPES from the server's sql_mode, which would read them otherwise."""
    admin = engine.connect()
    (mode,) = admin.fetchone("SELECT @@GLOBAL.sql_mode")
    admin.execute(f"SET GLOBAL sql_mode = '{mode},NO_BACKSLASH_ESCAPES'")
    try:
        session = engine.connect()
        try:
            assert session.call(*_call("SELECT CONCAT(?, '|', 'x' || 'y')", "a'b\\c")) == "a'b\\c|xy"
            assert "NO_BACKSLASH_ESCAPES" not in session.fetchone("SELECT @@SESSION.sql_mode")[0]
        finally:
            session.close()
    finally:
        admin.execute(f"SET GLOBAL sql_mode = '{mode}'")
        admin.close()


def test_queued_calls_run_in_order_on_the_queue_slot_and_their_values_are_kept(
        pump: Pump, engine: MariaDBEngine, sessions: list[MariaDBSession]) -> None:
    slot, queue_slot, queue = pump.add(sessions[0]), pump.add(sessions[1]), []
    pump.queue_on(queue_slot, queue)
    assert pump.give(queue_slot, queue, 0, float("inf")) == []
    before = _counted(sessions[2])
    calls = [COUNT, (*COUNT, "first"), (*_call("SELECT CONCAT(?, SLEEP(?))", "x", 0.1), "second"), (*COUNT, "third")]
    [(_, kind, index, times, _)] = _until_events(pump, pump.give(slot, calls, 0, time.monotonic() + 60))
    assert (kind, index, len(times)) == (DONE, 4, 8) and [entry[2] for entry in queue] == ["first", "second", "third"]
    assert _until_idle(pump) == [] and len(pump.progress(queue_slot)) == 6
    first, slept, third = pump.values(queue_slot)
    found = [first, slept, third] if isinstance(pump, PythonPump) else [int(first), slept.decode(), int(third)]
    assert found == [before + 2, "x0", before + 3]  # the C pump's values are the text the server sent
    assert _counted(sessions[2]) == before + 3 and pump.values(queue_slot) == []


def test_a_slow_call_holds_up_no_other_slot(pump: Pump, sessions: list[MariaDBSession]) -> None:
    slow, quick = pump.add(sessions[0]), pump.add(sessions[1])
    end = time.monotonic() + 60
    events = pump.give(slow, [_call("SELECT SLEEP(?)", 0.5)], 0, end) + pump.give(quick, [COUNT] * 3, 0, end)
    first = _until_events(pump, events)
    assert [event[:3] for event in first] == [(quick, DONE, 3)]
    assert [event[:3] for event in _until_events(pump, [])] == [(slow, DONE, 1)]


@pytest.mark.parametrize("call, kind, sqlstate", [(("SELECT fail_by_rule()", ()), _mysql.OperationalError,
                                                   ROLLBACK_SQLSTATE),
                                                  (("SELECT no_such_column", ()), _mysql.OperationalError, "42S22"),
                                                  (("SELEKT 1", ()), _mysql.ProgrammingError, "42000")])
def test_a_failed_call_stops_its_slot_with_the_error_a_call_raises(
        pump: Pump, sessions: list[MariaDBSession], call: tuple, kind: type, sqlstate: str) -> None:
    slot = pump.add(sessions[0])
    [(_, event, index, times, error)] = _until_events(pump, pump.give(slot, [COUNT, call, COUNT], 0,
                                                                      time.monotonic() + 60))
    assert (event, index, len(times)) == (FAILED, 1, 4)
    with pytest.raises(kind) as raised:
        sessions[1].call(*call)
    assert type(error) is type(raised.value) and error.args == raised.value.args and error.sqlstate == sqlstate
    assert not sessions[0].broken() and sessions[0].fetchone("SELECT 1") == (1,)  # the session goes on


def test_a_call_the_session_could_not_send_fails_alone(pump: Pump, sessions: list[MariaDBSession]) -> None:
    slot = pump.add(sessions[0])
    before = _counted(sessions[1])
    calls = [COUNT, ("SELECT ?", ()), COUNT]  # a parameter short
    [(_, event, index, times, error)] = _until_events(pump, pump.give(slot, calls, 0, time.monotonic() + 60))
    assert (event, index, len(times)) == (FAILED, 1, 4) and "takes 1 parameters, the call has 0" in str(error)
    assert _counted(sessions[1]) == before + 1
    assert [event[1:3] for event in _until_events(pump, pump.give(slot, calls, 2, time.monotonic() + 60))] == \
        [(DONE, 3)]


def test_a_lost_connection_fails_the_call_in_flight(pump: Pump, engine: MariaDBEngine,
                                                    sessions: list[MariaDBSession]) -> None:
    slot = pump.add(sessions[0])
    events = pump.give(slot, [_call("SELECT SLEEP(?)", 5)], 0, time.monotonic() + 60)
    time.sleep(0.3)
    sessions[1].execute(f"KILL CONNECTION {sessions[0].thread_id}")
    [(_, kind, index, _, error)] = _until_events(pump, events)
    assert (kind, index) == (FAILED, 0) and sessions[0].broken()
    assert engine.classify(error).name == "FAILED" and engine.fault(str(error)) is not None
