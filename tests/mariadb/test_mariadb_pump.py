"""MariaDB's split calls (send_call / call_finished) under the pump of engines/pump.py, against a real server:
busy server-side terminals share a process per core, a call in flight on each, as PostgreSQL's do."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterator

import pytest

from maximus import api
from maximus.engines.mariadb import MariaDBEngine, MariaDBSession
from maximus.engines.pump import DONE, FAILED, PythonPump
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
COUNT = ("SELECT count_one()", [])


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
def sessions(engine: MariaDBEngine) -> Iterator[list[MariaDBSession]]:
    opened = [engine.connect() for _ in range(3)]
    yield opened
    for session in opened:
        session.close()


def _counted(session: MariaDBSession) -> int:
    return session.fetchone("SELECT COUNT(*) FROM counted")[0]


def _until_events(pump: PythonPump, events: list, wanted: int = 1) -> list:
    deadline = time.monotonic() + 10
    while len(events) < wanted and time.monotonic() < deadline:
        events += pump.wait(1.0)
    return events


def test_busy_server_side_terminals_share_a_process_per_core(engine: MariaDBEngine) -> None:
    busy = TpccRunSettings(1, 1, NURandConstants.for_run(0, 1), server_side=True)
    cores = os.cpu_count() or 1
    assert api.terminal_hosting(engine, busy, 8) == ("multiplexed", -(-8 // min(8, cores)))


def test_a_slot_runs_its_calls_in_order_and_times_each_and_the_values_are_the_calls(
        sessions: list[MariaDBSession]) -> None:
    pump = PythonPump()
    slot = pump.add(sessions[0])
    before = _counted(sessions[2])
    began = time.monotonic()
    [(found_slot, kind, index, times, error)] = _until_events(pump, pump.give(slot, [COUNT] * 5, 0,
                                                                              time.monotonic() + 60))
    assert (found_slot, kind, index, error) == (slot, DONE, 5, None)
    assert len(times) == 10 and times == sorted(times) and began <= times[0] and times[-1] <= time.monotonic()
    assert _counted(sessions[2]) == before + 5 and pump.in_flight() == 0
    assert sessions[0].call_value() == sessions[0].fetchone("SELECT MAX(n) FROM counted")[0]


def test_a_slow_call_holds_up_no_other_slot(sessions: list[MariaDBSession]) -> None:
    pump = PythonPump()
    slow, quick = pump.add(sessions[0]), pump.add(sessions[1])
    end = time.monotonic() + 60
    events = pump.give(slow, [("SELECT SLEEP(?)", [0.5])], 0, end) + pump.give(quick, [COUNT] * 3, 0, end)
    first = _until_events(pump, events)
    assert [event[:3] for event in first] == [(quick, DONE, 3)]
    assert [event[:3] for event in _until_events(pump, [])] == [(slow, DONE, 1)]


def test_a_failed_call_stops_its_slot_with_the_error_a_call_raises(engine: MariaDBEngine,
                                                                  sessions: list[MariaDBSession]) -> None:
    pump = PythonPump()
    slot = pump.add(sessions[0])
    calls = [COUNT, ("SELECT fail_by_rule()", []), COUNT]
    [(_, kind, index, times, error)] = _until_events(pump, pump.give(slot, calls, 0, time.monotonic() + 60))
    assert (kind, index, len(times)) == (FAILED, 1, 4)
    assert error.sqlstate == ROLLBACK_SQLSTATE and "Item number is not valid" in str(error)
    assert not sessions[0].broken() and sessions[0].fetchone("SELECT 1") == (1,)  # the session goes on


def test_a_lost_connection_fails_the_call_in_flight(engine: MariaDBEngine, sessions: list[MariaDBSession]) -> None:
    pump = PythonPump()
    slot = pump.add(sessions[0])
    events = pump.give(slot, [("SELECT SLEEP(?)", [5])], 0, time.monotonic() + 60)
    time.sleep(0.3)
    sessions[1].execute(f"KILL CONNECTION {sessions[0].thread_id}")
    [(_, kind, index, _, error)] = _until_events(pump, events)
    assert (kind, index) == (FAILED, 0) and sessions[0].broken()
    assert engine.classify(error).name == "FAILED"
