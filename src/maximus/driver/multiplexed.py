"""Several busy terminals in one worker process, each keeping a call in flight on its own session.

A process per busy terminal is the simplest client, but on a machine the client shares with the
server every transaction then wakes a process of its own, and with more terminals than cores those
wake-ups crowd the server out: with 8 terminals on 2 cores the client alone cost 180-190 µs a
transaction, and New-Orders were 0.81-0.93 of pgbench's (bench/postgres_tpcc.py). Here one process per
core sends each of its terminals' calls and waits with poll(2) for whichever server answers first, as
pgbench's threads do; a result that arrives while another is handled is picked up in the same wake-up.

Only for what allows it: terminals without keying and think times, single-statement transactions
(server-side mode), and an engine whose sessions split a call in two (``Capabilities.split_calls``).
The terminal's rules are those of ``terminal.Terminal``: inputs drawn a batch ahead, samples, facts
and live counters written a batch at a time, deferred transactions queued, conflicts retried under the
retry policy (the backoff waits on a timer, not in a sleep that would stop the other terminals).
"""

from __future__ import annotations

import heapq
import select
from collections import deque
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from maximus.driver.clock import Clock
from maximus.driver.retry import RetryPolicy, failed
from maximus.driver.terminal import BATCH, Recorder, finish, queue_deferred, record_deferred
from maximus.engines.base import Engine, Session
from maximus.records import Outcome

_STOP_POLL_S = 0.25


class State(Enum):
    RUNNING = "the call is still running"
    OVER = "the transaction is over and recorded"
    IN_FLIGHT = "a call was sent"
    BACKOFF = "a conflict: send again at again_at"
    DONE = "nothing to send: the terminal's run is over, or no deferred transaction waits"


@dataclass
class _Caller:
    """One session with at most one single-statement transaction in flight, under the retry policy."""

    session: Session
    engine: Engine
    retry: RetryPolicy
    current: list = field(default_factory=list)  # [transaction, inputs, started, attempts, ...]
    again_at: float = 0.0

    def send(self, now: float) -> State:
        """Send the current call (again): IN_FLIGHT, or what a failure to send leads to."""
        self.current[3] += 1
        try:
            self.current[0].send(self.session, self.current[1])
        except Exception as error:  # a connection that cannot send fails the attempt like a server error
            return self._failed(error, now)
        return State.IN_FLIGHT

    def collect(self, now: float) -> State:
        """Read what the server sent: RUNNING, OVER, or BACKOFF."""
        try:
            if not self.session.call_finished():
                return State.RUNNING
        except Exception as error:
            return self._failed(error, now)
        self.over(now, (Outcome.COMMITTED, self.current[3], ""))
        return State.OVER

    def _failed(self, error: Exception, now: float) -> State:
        """The retry policy's rules for a call that cannot wait in a sleep: the backoff is a timer."""
        transaction, attempts = self.current[0], self.current[3]
        if transaction.rolled_back_by_rule(error):
            self.over(now, (Outcome.ROLLED_BACK, attempts, ""))
            return State.OVER
        wait = self.retry.backoff(error, attempts, self.engine.classify)
        if wait is None:
            self.over(now, failed(error, attempts))
            return State.OVER
        self.again_at = now + wait
        return State.BACKOFF

    def over(self, now: float, result: tuple[Outcome, int, str]) -> None:
        raise NotImplementedError

    def start(self, now: float, end: float) -> State:
        raise NotImplementedError


@dataclass
class MultiplexedTerminal(_Caller):
    """One terminal of a multiplexed process: its own emulator, session and transaction in flight."""

    index: int = 0
    emulator: Any = None
    recorder: Recorder | None = None  # shared by the process's terminals
    counters: Any = None
    delivery_queue: Any = None
    ahead: list = field(default_factory=list)  # drawn, not started yet (reversed: pop() gives the next)
    done: list = field(default_factory=list)  # over, not recorded yet

    def start(self, now: float, end: float) -> State:
        """Send the next transaction's call: IN_FLIGHT, BACKOFF, or DONE at the end of the run."""
        while now < end:
            if not self.ahead:
                self.record()
                self.ahead = self.emulator.batch(BATCH)[::-1]
            transaction, inputs = self.ahead.pop()
            if transaction.deferred:
                self.done.append((transaction, inputs, now, now, queue_deferred(self, transaction, inputs, now)))
                continue
            self.current = [transaction, inputs, now, 0]
            state = self.send(now)
            if state is not State.OVER:
                return state
        self.record()
        return State.DONE

    def over(self, now: float, result: tuple[Outcome, int, str]) -> None:
        transaction, inputs, started = self.current[:3]
        self.done.append((transaction, inputs, started, now, result))

    def record(self) -> None:
        for transaction, inputs, started, finished, result in self.done:
            finish(self, transaction, inputs, started, finished, result)
        self.done = []


@dataclass
class DeferredRunner(_Caller):
    """2.7.2 inside the process: runs what its terminals queue, on a session of its own, and records the
    time from queueing to completion. No queue between processes, no process to wake."""

    transactions: dict = field(default_factory=dict)  # by name, as the terminals queue them
    recorder: Recorder | None = None
    waiting: deque = field(default_factory=deque)  # (terminal, queued at, name, inputs)
    stopped: bool = False

    def put(self, request: tuple) -> None:
        self.waiting.append(request)

    def start(self, now: float, end: float) -> State:
        """Send the next queued transaction: every one queued runs, even after the end of the run, unless
        the run was stopped (Ctrl-C)."""
        while self.waiting and not self.stopped:
            terminal, queued_at, name, inputs = self.waiting.popleft()
            self.current = [self.transactions[name], inputs, now, 0, terminal, queued_at]
            state = self.send(now)
            if state is not State.OVER:
                return state
        self.waiting.clear()
        self.current = []  # idle: the next queued transaction starts it again
        return State.DONE

    def over(self, now: float, result: tuple[Outcome, int, str]) -> None:
        transaction, terminal, queued_at = self.current[0], self.current[4], self.current[5]
        record_deferred(self.recorder, terminal, transaction.name, queued_at, result, now)


def run_multiplexed(terminals: list[MultiplexedTerminal], deferred: DeferredRunner, clock: Clock,
                    end: float) -> None:
    """Drive the terminals until the end of the run (or a stop), every one with its call in flight, and
    the deferred transactions they queue."""
    now = clock.now
    poller, in_flight = select.poll(), {}
    backoffs: list[tuple[float, int, _Caller]] = []  # (send again at, a tie-breaker, who)

    def follow(caller: _Caller, state: State) -> None:
        if state is State.OVER:
            state = caller.start(now(), end)
        socket = caller.session.fileno()
        if state is State.IN_FLIGHT:
            if socket not in in_flight:
                in_flight[socket] = caller
                poller.register(socket, select.POLLIN)
            return
        if socket in in_flight:
            del in_flight[socket]
            poller.unregister(socket)
        if state is State.BACKOFF:
            heapq.heappush(backoffs, (caller.again_at, id(caller), caller))

    for terminal in terminals:
        follow(terminal, terminal.start(now(), end))
    stop_check = now() + _STOP_POLL_S
    while in_flight or backoffs or deferred.waiting:
        if deferred.waiting and not deferred.current:
            follow(deferred, deferred.start(now(), end))
        wait = min(backoffs[0][0], stop_check) if backoffs else stop_check
        for socket, _ in poller.poll(max(wait - now(), 0.0) * 1000.0):
            caller = in_flight[socket]
            state = caller.collect(now())
            if state is not State.RUNNING:
                follow(caller, state)
        while backoffs and backoffs[0][0] <= now():
            caller = heapq.heappop(backoffs)[2]
            follow(caller, caller.send(now()))
        if now() >= stop_check:
            stop_check = now() + _STOP_POLL_S
            if not clock.sleep(0):  # stopped: no new transaction starts, those in flight finish
                end = now()
                deferred.stopped = True
