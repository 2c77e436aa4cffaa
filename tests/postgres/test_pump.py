"""The pumps of engines/pump.py against a real server: the C one over psycopg's libpq must do exactly what
the Python one does, event for event, so every test runs on both."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterator

import psycopg
import pytest

from maximus.engines.postgres import LibpqPump, PostgresEngine, PostgresSession
from maximus.engines.pump import DONE, END, FAILED, Pump

SETUP = """
CREATE SEQUENCE IF NOT EXISTS counted;
CREATE OR REPLACE FUNCTION count_one() RETURNS bigint LANGUAGE sql AS $$ SELECT nextval('counted') $$;
CREATE OR REPLACE FUNCTION fail_with(p_state text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'failed on purpose' USING ERRCODE = p_state;
END $$;
"""
COUNT = ("SELECT count_one()", [])


@pytest.fixture(scope="module")
def engine(server_workdir: Path, server_with: Callable) -> Iterator[PostgresEngine]:
    with server_with(server_workdir, "pumps", SETUP) as engine:
        yield engine


@pytest.fixture
def pump(make_pump: Callable[[PostgresEngine], Pump], engine: PostgresEngine) -> Pump:
    return make_pump(engine)


@pytest.fixture
def sessions(engine: PostgresEngine) -> Iterator[list[PostgresSession]]:
    opened = [engine.connect() for _ in range(2)]
    yield opened
    for session in opened:
        session.close()


def _counted(session: PostgresSession) -> int:
    return session.fetchone("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM counted")[0]


def _until_event(pump: Pump, events: list) -> list:
    deadline = time.monotonic() + 10
    while not events and time.monotonic() < deadline:
        events = pump.wait(1.0)
    return events


def test_the_engine_sends_its_calls_with_the_c_pump_over_psycopgs_libpq(engine: PostgresEngine) -> None:
    assert isinstance(engine.call_pump(), LibpqPump), \
        "maximus.engines._libpq_pump was not compiled: pip install -e . needs a C compiler (docs/postgres.md)"


def test_a_slot_runs_its_calls_in_order_and_times_each(pump: Pump, sessions: list[PostgresSession]) -> None:
    slot = pump.add(sessions[0])
    before = _counted(sessions[1])
    began = time.monotonic()
    events = _until_event(pump, pump.give(slot, [COUNT] * 5, 0, time.monotonic() + 60))
    assert [event[:3] for event in events] == [(slot, DONE, 5)]
    times = events[0][3]
    assert len(times) == 10 and times == sorted(times) and began <= times[0] and times[-1] <= time.monotonic()
    assert _counted(sessions[1]) == before + 5
    assert pump.in_flight() == 0


@pytest.fixture
def queued(pump: Pump, engine: PostgresEngine, sessions: list[PostgresSession]) -> Iterator[tuple[int, int, list]]:
    """A slot, and a queue slot on a session of its own running the queue: (slot, queue slot, queue)."""
    runner, queue = engine.connect(), []
    slot, queue_slot = pump.add(sessions[0]), pump.add(runner)
    pump.queue_on(queue_slot, queue)
    assert pump.give(queue_slot, queue, 0, float("inf")) == []
    yield slot, queue_slot, queue
    runner.close()


def _until_idle(pump: Pump) -> list:
    events, deadline = [], time.monotonic() + 10
    while pump.in_flight() and time.monotonic() < deadline:
        events += pump.wait(1.0)
    return events


def test_queued_calls_run_in_order_on_the_queue_slot_and_the_others_go_on(
        pump: Pump, queued: tuple[int, int, list], sessions: list[PostgresSession]) -> None:
    slot, queue_slot, queue = queued
    before = _counted(sessions[1])
    calls = [COUNT, (*COUNT, "first"), COUNT, ("SELECT pg_sleep(0.1)", [], "second"), (*COUNT, "third"), COUNT]
    events = _until_event(pump, pump.give(slot, calls, 0, time.monotonic() + 60))
    [(_, kind, index, times, _)] = events
    assert (kind, index, len(times)) == (DONE, 6, 12)
    assert [entry[2] for entry in queue] == ["first", "second", "third"]
    assert [entry[3] for entry in queue] == [times[2], times[6], times[8]]  # queued at, and over at once
    assert times[2] == times[3] and times[6] == times[7] and times[8] == times[9] and times == sorted(times)
    assert _until_idle(pump) == []  # the queue slot reports no DONE
    done = pump.progress(queue_slot)
    assert len(done) == 6 and done == sorted(done) and done[0] >= times[2] and done[3] - done[2] >= 0.1
    assert pump.progress(queue_slot) == [] and pump.in_flight() == 0
    assert _counted(sessions[1]) == before + 5
    first, slept, third = pump.values(queue_slot)  # what each queued call returned: pg_sleep's void is ''
    assert first.isdigit() and slept == b"" and third.isdigit() and int(first) < int(third) <= before + 5
    assert pump.values(queue_slot) == [] and pump.values(slot) == []
    queue_more = [(*COUNT, "fourth")]  # the queue slot takes calls queued after it went idle
    assert _until_event(pump, pump.give(slot, queue_more, 0, time.monotonic() + 60))[0][1] == DONE
    assert _until_idle(pump) == [] and len(pump.progress(queue_slot)) == 2 and len(queue) == 4
    assert _counted(sessions[1]) == before + 6


def test_a_failed_queued_call_stops_the_queue_slot_until_it_is_given_the_queue_again(
        pump: Pump, queued: tuple[int, int, list], sessions: list[PostgresSession]) -> None:
    slot, queue_slot, queue = queued
    before = _counted(sessions[1])
    calls = [("SELECT fail_with(?)", [b"40001"], "first"), (*COUNT, "second")]
    events = _until_event(pump, pump.give(slot, calls, 0, time.monotonic() + 60))
    events += _until_idle(pump)
    failed = [event for event in events if event[0] == queue_slot]
    assert [(event[1], event[2], len(event[3])) for event in failed] == [(FAILED, 0, 2)]
    assert failed[0][4].sqlstate == "40001" and len(queue) == 2
    assert _counted(sessions[1]) == before  # the second waits in the queue, and so does one queued now
    assert _until_event(pump, pump.give(slot, [(*COUNT, "third")], 0, time.monotonic() + 60))[0][1] == DONE
    assert pump.in_flight() == 0 and len(queue) == 3 and _counted(sessions[1]) == before
    assert pump.give(queue_slot, queue, 1, float("inf")) == []
    assert _until_idle(pump) == [] and len(pump.progress(queue_slot)) == 4
    assert _counted(sessions[1]) == before + 2
    assert pump.values(queue_slot) == [str(before + 1).encode(), str(before + 2).encode()]  # none for the failed one


def test_a_stop_ends_the_queue_slot_after_its_call_in_flight(pump: Pump, queued: tuple[int, int, list],
                                                             sessions: list[PostgresSession]) -> None:
    slot, queue_slot, _ = queued
    before = _counted(sessions[1])
    sleep = ("SELECT pg_sleep(0.2)", [], "sleep")
    events = _until_event(pump, pump.give(slot, [sleep, (*COUNT, "count")], 0, time.monotonic() + 60))
    assert [event[1:3] for event in events] == [(DONE, 2)]
    pump.end_all(time.monotonic())
    events = _until_idle(pump)
    assert [(event[0], event[1], event[2], len(event[3])) for event in events] == [(queue_slot, END, 1, 2)]
    assert _counted(sessions[1]) == before


def test_a_call_to_queue_past_the_slots_end_ends_it_unqueued(pump: Pump, queued: tuple[int, int, list]) -> None:
    slot, _, queue = queued
    assert [event[1:3] for event in pump.give(slot, [(*COUNT, "late")], 0, time.monotonic())] == [(END, 0)]
    assert queue == [] and pump.in_flight() == 0


def test_a_call_to_queue_without_a_queue_slot_fails_alone(pump: Pump, sessions: list[PostgresSession]) -> None:
    slot = pump.add(sessions[0])
    events = _until_event(pump, pump.give(slot, [(*COUNT, "queued"), COUNT], 0, time.monotonic() + 60))
    [(_, event, index, times, error)] = events
    assert (event, index, len(times)) == (FAILED, 0, 2) and isinstance(error, TypeError)


@pytest.mark.parametrize("state, kind", [("40001", psycopg.errors.SerializationFailure),
                                         ("22012", psycopg.errors.DivisionByZero),
                                         ("MX001", psycopg.DatabaseError)])
def test_a_failed_call_stops_the_slot_with_the_error_psycopg_raises(pump: Pump,
                                                                    sessions: list[PostgresSession], state: str,
                                                                    kind: type) -> None:
    slot = pump.add(sessions[0])
    calls = [COUNT, ("SELECT fail_with(?)", [state.encode()]), COUNT]
    before = _counted(sessions[1])
    events = _until_event(pump, pump.give(slot, calls, 0, time.monotonic() + 60))
    [(_, event, index, times, error)] = events
    assert (event, index, len(times)) == (FAILED, 1, 4)  # the call before it, then the failed one
    assert type(error) is kind and error.sqlstate == state and "failed on purpose" in str(error)
    with pytest.raises(kind) as raised:  # the message the session's own call gives, word for word
        sessions[1].call("SELECT fail_with(?)", [state.encode()])
    assert str(error) == str(raised.value)
    assert _counted(sessions[1]) == before + 1  # the call after it was not sent
    assert sessions[0].fetchone("SELECT 1") == (1,)  # the session is usable


def test_past_its_end_a_slot_sends_nothing_but_a_retry(pump: Pump, sessions: list[PostgresSession]) -> None:
    slot = pump.add(sessions[0])
    before, ended = _counted(sessions[1]), time.monotonic()
    assert [event[1:3] for event in pump.give(slot, [COUNT, COUNT], 0, ended)] == [(END, 0)]
    events = _until_event(pump, pump.give(slot, [COUNT, COUNT], 0, ended, True))
    assert [(event[1], event[2], len(event[3])) for event in events] == [(END, 1, 2)]
    assert _counted(sessions[1]) == before + 1


def test_a_stop_lets_the_calls_in_flight_finish_and_sends_no_other(pump: Pump,
                                                                   sessions: list[PostgresSession]) -> None:
    slot = pump.add(sessions[0])
    before = _counted(sessions[1])
    assert pump.give(slot, [("SELECT pg_sleep(0.2)", []), COUNT], 0, time.monotonic() + 60) == []
    pump.end_all(time.monotonic())
    events = _until_event(pump, [])
    assert [(event[1], event[2], len(event[3])) for event in events] == [(END, 1, 2)]
    assert _counted(sessions[1]) == before


def test_a_slow_call_holds_up_no_other_slot(pump: Pump, sessions: list[PostgresSession]) -> None:
    slow, quick = pump.add(sessions[0]), pump.add(sessions[1])
    end = time.monotonic() + 60
    assert pump.give(slow, [("SELECT pg_sleep(0.5)", [])], 0, end) == []
    assert pump.give(quick, [COUNT] * 20, 0, end) == []
    assert pump.in_flight() == 2
    first = _until_event(pump, [])
    assert [event[:3] for event in first] == [(quick, DONE, 20)]
    assert first[0][3][-1] - first[0][3][0] < 0.5
    assert [event[:3] for event in _until_event(pump, [])] == [(slow, DONE, 1)]


def test_a_statement_that_cannot_be_prepared_fails_its_call(pump: Pump, sessions: list[PostgresSession]) -> None:
    slot = pump.add(sessions[0])
    events = _until_event(pump, pump.give(slot, [("SELECT no_such_function()", [])], 0, time.monotonic() + 60))
    [(_, event, index, times, error)] = events
    assert (event, index, len(times)) == (FAILED, 0, 2)
    assert type(error) is psycopg.errors.UndefinedFunction


def test_a_lost_connection_fails_the_call_in_flight(pump: Pump, sessions: list[PostgresSession],
                                                    engine: PostgresEngine) -> None:
    slot = pump.add(sessions[0])
    pid = sessions[0].fetchone("SELECT pg_backend_pid()")[0]
    assert pump.give(slot, [("SELECT pg_sleep(5)", [])], 0, time.monotonic() + 60) == []
    killer = engine.connect()
    killer.fetchone("SELECT pg_terminate_backend(?)", (pid,))
    killer.close()
    [(_, event, index, times, error)] = _until_event(pump, [])
    assert (event, index, len(times)) == (FAILED, 0, 2)
    assert isinstance(error, psycopg.OperationalError)


def test_a_call_the_session_could_not_send_fails_alone(pump: Pump, sessions: list[PostgresSession]) -> None:
    slot = pump.add(sessions[0])
    before = _counted(sessions[1])
    events = _until_event(pump, pump.give(slot, [COUNT, ("SELECT ?::int", [1]), COUNT], 0, time.monotonic() + 60))
    [(_, event, index, times, error)] = events
    assert (event, index, len(times)) == (FAILED, 1, 4) and isinstance(error, TypeError)
    assert _counted(sessions[1]) == before + 1
    events = _until_event(pump, pump.give(slot, [COUNT, ("SELECT ?::int", [1]), COUNT], 2, time.monotonic() + 60))
    assert [event[1:3] for event in events] == [(DONE, 3)]
