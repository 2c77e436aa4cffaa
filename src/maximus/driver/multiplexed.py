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
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from maximus.driver.clock import Clock
from maximus.driver.retry import RetryPolicy
from maximus.driver.terminal import BATCH, Recorder, finish, queue_deferred
from maximus.engines.base import Engine, Session
from maximus.records import Outcome

_STOP_POLL_S = 0.25


class State(Enum):
    RUNNING = "the call is still running"
    OVER = "the transaction is over and recorded"
    IN_FLIGHT = "a call was sent"
    BACKOFF = "a conflict: send again at again_at"
    DONE = "the terminal's run is over"


@dataclass
class MultiplexedTerminal:
    """One terminal of a multiplexed process: its own emulator, session and transaction in flight."""

    index: int
    emulator: Any
    session: Session
    engine: Engine
    retry: RetryPolicy
    recorder: Recorder  # shared by the process's terminals
    counters: Any
    delivery_queue: Any
    ahead: list = field(default_factory=list)  # drawn, not started yet (reversed: pop() gives the next)
    done: list = field(default_factory=list)  # over, not recorded yet
    current: list = field(default_factory=list)  # [transaction, inputs, started, attempts]
    again_at: float = 0.0

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
        transaction, inputs, started, attempts = self.current
        self.done.append((transaction, inputs, started, now, (Outcome.COMMITTED, attempts, "")))
        return State.OVER

    def _failed(self, error: Exception, now: float) -> State:
        """The retry policy's rules (``RetryPolicy.run``) for a call that cannot wait in a sleep."""
        transaction, inputs, started, attempts = self.current
        if transaction.rolled_back_by_rule(error):
            result = (Outcome.ROLLED_BACK, attempts, "")
        elif self.engine.classify(error) is Outcome.RETRY and attempts < self.retry.max_attempts:
            self.again_at = now + self.retry.first_backoff_s * 2 ** (attempts - 1)
            return State.BACKOFF
        else:  # a failure is counted, never swallowed
            result = (Outcome.FAILED, attempts, f"{type(error).__name__}: {error}")
        self.done.append((transaction, inputs, started, now, result))
        return State.OVER

    def record(self) -> None:
        for transaction, inputs, started, finished, result in self.done:
            finish(self, transaction, inputs, started, finished, result)
        self.done = []


def run_multiplexed(terminals: list[MultiplexedTerminal], clock: Clock, end: float) -> None:
    """Drive the terminals until the end of the run (or a stop), every one with its call in flight."""
    now = clock.now
    poller, in_flight = select.poll(), {}
    backoffs: list[tuple[float, int, MultiplexedTerminal]] = []  # (send again at, index, terminal)

    def follow(terminal: MultiplexedTerminal, state: State) -> None:
        if state is State.OVER:
            state = terminal.start(now(), end)
        if state is State.IN_FLIGHT:
            if terminal.session.fileno() not in in_flight:
                in_flight[terminal.session.fileno()] = terminal
                poller.register(terminal.session.fileno(), select.POLLIN)
            return
        if terminal.session.fileno() in in_flight:
            del in_flight[terminal.session.fileno()]
            poller.unregister(terminal.session.fileno())
        if state is State.BACKOFF:
            heapq.heappush(backoffs, (terminal.again_at, terminal.index, terminal))

    for terminal in terminals:
        follow(terminal, terminal.start(now(), end))
    stop_check = now() + _STOP_POLL_S
    while in_flight or backoffs:
        wait = min(backoffs[0][0], stop_check) if backoffs else stop_check
        for socket, _ in poller.poll(max(wait - now(), 0.0) * 1000.0):
            terminal = in_flight[socket]
            state = terminal.collect(now())
            if state is not State.RUNNING:
                follow(terminal, state)
        while backoffs and backoffs[0][0] <= now():
            terminal = heapq.heappop(backoffs)[2]
            follow(terminal, terminal.send(now()))
        if now() >= stop_check:
            stop_check = now() + _STOP_POLL_S
            if not clock.sleep(0):  # stopped: no new transaction starts, those in flight finish
                end = now()
