"""Busy terminals sharing one process (driver.multiplexed) against a real server: retries on a timer
that does not stop the other terminals, rollbacks by rule, failures, deferred transactions run in the
process, and a stop."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import pytest

from maximus.driver.clock import SystemClock
from maximus.driver.multiplexed import DeferredRunner, MultiplexedTerminal, run_multiplexed
from maximus.driver.retry import RetryPolicy
from maximus.driver.collected import Collected
from maximus.driver.terminal import Recorder, result_from_wire
from maximus.engines.postgres import PostgresEngine, PostgresSession
from maximus.engines.pump import Pump
from maximus.records import Outcome, TxnSample, Window
from maximus.workloads.tpcc.server_side import ServerSide

# kind 0 commits; kind 1 meets a serialization failure on every other call of its terminal (so each
# of its transactions commits at the second attempt); kind 2 rolls back by rule; kind 3 fails.
# Terminal 0 draws them in this order: runs of commits between the others, and commits after a retry.
KINDS = (0, 0, 1, 0, 0, 2, 0, 0, 3)
FLAKY = """
CREATE SEQUENCE IF NOT EXISTS flaky_0; CREATE SEQUENCE IF NOT EXISTS flaky_1;
CREATE OR REPLACE FUNCTION flaky(p_terminal int, p_kind int) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
    IF p_kind = 1 AND nextval('flaky_' || p_terminal) % 2 = 1 THEN
        RAISE EXCEPTION 'conflict' USING ERRCODE = '40001';
    ELSIF p_kind = 2 THEN
        RAISE EXCEPTION 'unused item' USING ERRCODE = 'MX001';
    ELSIF p_kind = 3 THEN
        RAISE EXCEPTION 'broken' USING ERRCODE = '22012';
    END IF;
    RETURN p_kind;
END $$;
"""


class Returned(NamedTuple):
    """A deferred flaky call's result record: what the call returned."""

    kind: int


class Flaky:
    """A one-statement transaction whose input says how the call ends: terminal 0 goes through the four
    kinds in turn, terminal 1 only commits."""

    name, read_only, deferred, one_snapshot, isolation_means = "flaky", False, False, False, ""

    def __init__(self, terminal: int, deferred: bool = False) -> None:
        self.terminal, self.drawn = terminal, 0
        if deferred:
            self.name, self.deferred = "later", True

    def draw(self, rng: object, home: object) -> int:
        self.drawn += 1
        return KINDS[(self.drawn - 1) % len(KINDS)] if self.terminal == 0 else 0

    def call(self, kind: int) -> tuple[str, tuple]:
        return "SELECT flaky(?, ?)", (self.terminal, kind)

    def summed_facts(self, kinds: list[int]) -> dict[str, int]:
        return {"calls": len(kinds), "kind": sum(kinds)}

    def deferred_result(self, kind: int, value: bytes) -> Returned:
        return Returned(int(value))


class Scripted:
    """Terminal 0 runs the flaky transaction; terminal 1 alternates it with a deferred one."""

    headline = "flaky"

    def __init__(self, terminal: int) -> None:
        self.terminal = terminal
        self.transactions = [ServerSide(Flaky(terminal), DIALECT), ServerSide(Flaky(terminal, True), DIALECT)]

    def batch(self, size: int) -> list:
        kinds = [self.transactions[n % 2 if self.terminal == 1 else 0] for n in range(size)]
        return [(transaction, transaction.draw(None, None)) for transaction in kinds]


DIALECT = PostgresEngine.dialect
MakePump = Callable[[PostgresEngine], Pump]


class Outbox(list):
    put = list.append


@pytest.fixture(scope="module")
def engine(server_workdir: Path, server_with: Callable) -> Iterator[PostgresEngine]:
    with server_with(server_workdir, "multiplexed", FLAKY) as engine:
        yield engine


def _drive(engine: PostgresEngine, make_pump: MakePump, seconds: float,
           stop_after: float | None = None) -> tuple[list, float]:
    samples, elapsed, _, _ = _drive_counted(engine, make_pump, seconds, stop_after)
    return samples, elapsed


def _drive_counted(engine: PostgresEngine, make_pump: MakePump, seconds: float,
                   stop_after: float | None = None) -> tuple[list, float, Counter, list[int]]:
    """``_drive``, with the facts the recorder sent and the terminals' live counters."""
    stop = threading.Event()
    if stop_after is not None:
        threading.Timer(stop_after, stop.set).start()
    origin, outbox = time.monotonic(), Outbox()
    recorder = Recorder(outbox, Window(0.0, seconds), origin)
    sessions = [engine.connect() for _ in range(3)]
    retry = RetryPolicy(first_backoff_s=0.05)
    later = Scripted(1).transactions[1]
    deferred = DeferredRunner(sessions[2], engine, retry, transactions={later.name: later}, recorder=recorder)
    counters = [0] * 4
    terminals = [MultiplexedTerminal(session, engine, retry, index=index, emulator=Scripted(index), recorder=recorder,
                                     counters=counters)
                 for index, session in enumerate(sessions[:2])]
    run_multiplexed(terminals, deferred, SystemClock(stop), origin + seconds, make_pump(engine))
    elapsed = time.monotonic() - origin
    recorder.flush(time.monotonic())
    for session in sessions:
        session.close()
    facts = sum((Counter(message[2]) for message in outbox), Counter())
    return _samples(outbox, origin), elapsed, facts, counters


def _samples(outbox: Outbox, origin: float) -> list[TxnSample]:
    """Every sample of the recorder's messages, as the parent makes them."""
    collected = Collected()
    for message in outbox:
        collected.add(message[1], message[3], origin)
    return list(collected.samples())


def test_conflicts_are_retried_on_a_timer_while_the_other_terminal_goes_on(engine: PostgresEngine,
                                                                          make_pump: MakePump) -> None:
    samples, elapsed = _drive(engine, make_pump, 1.5)
    # Terminal 1 queues a deferred call per call of its own, as fast as the runner can serve them, so the
    # backlog drained after the end varies with the machine's load: the run ends when it is drained.
    assert max(s.start for s in samples if s.transaction == "flaky") < 1.5
    assert elapsed < max(s.start + s.latency for s in samples) + 0.5
    outcomes = {(s.outcome, s.attempts, s.error.split(":")[0]) for s in samples}
    assert outcomes == {(Outcome.COMMITTED, 1, ""), (Outcome.COMMITTED, 2, ""), (Outcome.ROLLED_BACK, 1, ""),
                        (Outcome.FAILED, 1, "DivisionByZero")}
    retried = [s for s in samples if s.attempts == 2]
    assert all(s.latency >= 0.05 for s in retried)  # the policy's backoff came before the second attempt
    within_the_run = [s for s in retried if s.start + s.latency < 1.5]  # after it, terminal 1 starts nothing
    # ... and the other terminal ran meanwhile: the backoff stopped nobody else. A sleep in its place lets a
    # handful through (the calls in flight and what they queue: a median of 4); the timer, hundreds. The
    # median, because now and then the whole process is stalled (by the machine) for longer than a backoff.
    inside = sorted(len([s for s in samples if s.terminal == 1
                         and sample.start < s.start and s.start + s.latency < sample.start + sample.latency])
                    for sample in within_the_run)
    assert len(inside) > 5 and inside[len(inside) // 2] >= 10, inside


def test_every_queued_deferred_transaction_runs_in_the_process_and_is_timed_from_its_queueing(
        engine: PostgresEngine, make_pump: MakePump) -> None:
    samples, _ = _drive(engine, make_pump, 1.0)
    queued = sorted(s.start for s in samples if s.transaction == "later")
    completed = [s for s in samples if s.transaction == "deferred_later"]
    assert len(queued) > 20 and sorted(s.start for s in completed) == queued
    assert all(s.outcome is Outcome.COMMITTED and s.terminal == 1 and s.latency > 0 for s in completed)


def test_live_counters_and_facts_agree_with_the_samples_whatever_the_outcome(engine: PostgresEngine,
                                                                              make_pump: MakePump) -> None:
    """Calls committed at their first attempt are recorded in one pass per batch, the others one by one:
    both must count what ``finish`` counts. Facts: only for calls that did not fail and lie in the window."""
    samples, _, facts, counters = _drive_counted(engine, make_pump, 1.0)
    for terminal in (0, 1):
        mine = [s for s in samples if s.terminal == terminal and not s.transaction.startswith("deferred_")]
        assert counters[2 * terminal + 1] == sum(s.outcome is not Outcome.FAILED for s in mine)
        assert counters[2 * terminal] == sum(s.outcome is not Outcome.FAILED and s.transaction == "flaky" for s in mine)
    window = Window(0.0, 1.0)
    counted = [s for s in samples
               if s.transaction == "flaky" and s.outcome is not Outcome.FAILED and window.contains(s)]
    kinds = {(Outcome.COMMITTED, 1): 0, (Outcome.COMMITTED, 2): 1, (Outcome.ROLLED_BACK, 1): 2}  # see FLAKY
    assert counted and facts["flaky.calls"] == len(counted)
    assert facts["flaky.kind"] == sum(kinds[s.outcome, s.attempts] for s in counted) > 0
    assert len(samples) > sum(counters[1::2])  # the failures and the deferred ones are samples too
    for terminal in (0, 1):  # a terminal's calls one after the other: each sample timed by its own call's times
        mine = sorted((s for s in samples if s.terminal == terminal and not s.transaction.startswith("deferred_")),
                      key=lambda s: s.start)
        assert all(s.latency >= 0 for s in mine)
        assert all(a.start + a.latency <= b.start + 1e-9 for a, b in zip(mine, mine[1:]))


def test_deferred_transactions_are_retried_rolled_back_and_failed_on_the_queue_each_recorded_once(
        engine: PostgresEngine, make_pump: MakePump) -> None:
    """The deferred session runs the queue as the pump fills it: a conflict waits for its backoff and is
    sent again, a failure is recorded and the queue goes on, and every queued one is recorded once."""
    outbox = Outbox()
    samples, _, _ = _drive_one(engine, make_pump, 1.0, RetryPolicy(first_backoff_s=0.05), Deferring(), outbox=outbox)
    queued = sorted(s.start for s in samples if s.transaction == "later")
    completed = [s for s in samples if s.transaction == "deferred_later"]
    assert len(queued) == 64 and sorted(s.start for s in completed) == queued
    outcomes = {(s.outcome, s.attempts, s.error.split(":")[0]) for s in completed}
    assert outcomes == {(Outcome.COMMITTED, 1, ""), (Outcome.COMMITTED, 2, ""), (Outcome.ROLLED_BACK, 1, ""),
                        (Outcome.FAILED, 1, "DivisionByZero")}
    # 2.7.2.3: each one's result record, in the order queued, with what its committed call returned (its kind)
    results = [result_from_wire(fields) for message in outbox for fields in message[4]]
    assert [(r.queued, r.completed) for r in sorted(results, key=lambda r: r.queued)] == \
           sorted((s.start, s.start + s.latency) for s in completed)
    by_attempts = {(s.start, s.attempts) for s in completed}
    kinds = {(r.outcome, r.record and r.record["kind"], attempts) for r in results
             for start, attempts in by_attempts if start == r.queued}
    assert kinds == {(Outcome.COMMITTED, 0, 1), (Outcome.COMMITTED, 1, 2), (Outcome.ROLLED_BACK, None, 1),
                     (Outcome.FAILED, None, 1)}
    assert all(s.latency >= 0.05 for s in completed if s.attempts == 2)  # the backoff came before the retry
    ends = [s.start + s.latency for s in sorted(completed, key=lambda s: s.start)]  # in the order queued
    assert all(a <= b for a, b in zip(ends, ends[1:]))


def test_a_stop_ends_the_run_and_keeps_what_was_measured(engine: PostgresEngine, make_pump: MakePump) -> None:
    samples, elapsed = _drive(engine, make_pump, 60.0, stop_after=0.5)
    assert elapsed < 5.0
    assert {s.terminal for s in samples} == {0, 1}
    assert max(s.start for s in samples) < 1.5


class Always:
    """One terminal whose every transaction is the flaky one of one kind."""

    headline = "flaky"

    def __init__(self, kind: int) -> None:
        self.transaction = ServerSide(Flaky(0), DIALECT)
        self.transaction.inner.draw = lambda rng, home: kind

    def batch(self, size: int) -> list:
        return [(self.transaction, self.transaction.draw(None, None)) for _ in range(size)]


class Deferring:
    """One terminal alternating, for its first 128 calls, a flaky call that commits with a deferred one
    going through the kinds; then only the first (a longer queue would take a backoff per nine)."""

    headline = "flaky"

    def __init__(self) -> None:
        self.transactions = [ServerSide(Flaky(1), DIALECT), ServerSide(Flaky(0, True), DIALECT)]
        self.drawn = 0

    def batch(self, size: int) -> list:
        self.drawn += size
        kinds = (self.transactions[n % 2 if n < 128 else 0] for n in range(self.drawn - size, self.drawn))
        return [(transaction, transaction.draw(None, None)) for transaction in kinds]


def _drive_one(engine: PostgresEngine, make_pump: MakePump, seconds: float, retry: RetryPolicy, emulator: object,
               during: Callable[[PostgresSession], None] | None = None, deferred_session: bool = False,
               stop_after: float | None = None, outbox: Outbox | None = None) -> tuple[list, float, float]:
    """One terminal (and the deferred runner): its samples, the run's wall time and the thread's CPU time.
    ``during`` is given the terminal's session, or the deferred runner's; ``outbox`` gets the recorder's
    messages."""
    stop = threading.Event()
    if stop_after is not None:
        threading.Timer(stop_after, stop.set).start()
    origin, outbox = time.monotonic(), Outbox() if outbox is None else outbox
    recorder = Recorder(outbox, Window(0.0, seconds), origin)
    sessions = [engine.connect() for _ in range(2)]
    if during is not None:
        during(sessions[1 if deferred_session else 0])
    later = {t.name: t for t in getattr(emulator, "transactions", ()) if t.deferred}
    deferred = DeferredRunner(sessions[1], engine, retry, transactions=later, recorder=recorder)
    terminal = MultiplexedTerminal(sessions[0], engine, retry, index=0, emulator=emulator, recorder=recorder,
                                   counters=[0] * 2)
    cpu = time.thread_time()
    run_multiplexed([terminal], deferred, SystemClock(stop), origin + seconds, make_pump(engine))
    cpu, elapsed = time.thread_time() - cpu, time.monotonic() - origin
    recorder.flush(time.monotonic())
    for session in sessions:
        session.close()
    return _samples(outbox, origin), elapsed, cpu


def test_a_process_whose_terminals_all_wait_for_a_backoff_sleeps(engine: PostgresEngine,
                                                                make_pump: MakePump) -> None:
    samples, elapsed, cpu = _drive_one(engine, make_pump, 1.0, RetryPolicy(first_backoff_s=0.2), Always(1))
    retried = [s for s in samples if s.attempts == 2]  # kind 1 conflicts on every other call: all but the first
    assert len(retried) >= 2 and len(retried) >= len(samples) - 1 and all(s.latency >= 0.2 for s in retried)
    assert cpu < 0.3 * elapsed  # the backoffs are slept through, not polled for


def _terminate_soon(engine: PostgresEngine) -> Callable[[PostgresSession], None]:
    """Ends the session's backend 0.3 s from now, as a server restart or an administrator would."""
    def terminate_soon(session: PostgresSession) -> None:
        pid, killer = session.fetchone("SELECT pg_backend_pid()")[0], engine.connect()

        def terminate() -> None:
            killer.fetchone("SELECT pg_terminate_backend(?)", (pid,))
            killer.close()

        threading.Timer(0.3, terminate).start()

    return terminate_soon


def test_a_terminal_whose_connection_is_lost_records_one_failure_and_stops(engine: PostgresEngine,
                                                                          make_pump: MakePump) -> None:
    samples, elapsed, _ = _drive_one(engine, make_pump, 3.0, RetryPolicy(), Always(0), _terminate_soon(engine))
    failed = [s for s in samples if s.outcome is Outcome.FAILED]
    assert len(failed) == 1 and max(s.start for s in samples) <= failed[0].start
    assert len(samples) > len(failed) and elapsed < 2.0


def test_a_lost_deferred_session_fails_each_queued_call_and_the_terminal_goes_on(engine: PostgresEngine,
                                                                                 make_pump: MakePump) -> None:
    """The queue takes a backoff per nine calls (0.2 s), so the session is lost with most of it unsent:
    every call queued is still recorded once, those after the loss as failed."""
    samples, elapsed, _ = _drive_one(engine, make_pump, 1.0, RetryPolicy(first_backoff_s=0.2), Deferring(),
                                     _terminate_soon(engine), deferred_session=True)
    queued = sorted(s.start for s in samples if s.transaction == "later")
    completed = [s for s in samples if s.transaction == "deferred_later"]
    assert len(queued) == 64 and sorted(s.start for s in completed) == queued
    lost = [s for s in completed if s.outcome is Outcome.FAILED and s.error.startswith("OperationalError")]
    assert 5 < len(lost) < 64 and all(s.start + s.latency >= 0.3 for s in lost)
    assert max(s.start for s in samples if s.transaction == "flaky") > 0.5 and elapsed < 3.0


def test_a_stop_drops_the_queued_calls_not_yet_sent(engine: PostgresEngine, make_pump: MakePump) -> None:
    """After a stop the call in flight on the queue, or the one waiting for its backoff, is finished, and
    nothing else queued is sent: the run ends at once instead of draining the queue."""
    samples, elapsed, _ = _drive_one(engine, make_pump, 60.0, RetryPolicy(first_backoff_s=0.2), Deferring(),
                                     stop_after=0.3)
    queued = {s.start for s in samples if s.transaction == "later"}
    completed = [s for s in samples if s.transaction == "deferred_later"]
    assert len(queued) == 64 and 0 < len(completed) < 64 and {s.start for s in completed} <= queued
    assert elapsed < 1.5
