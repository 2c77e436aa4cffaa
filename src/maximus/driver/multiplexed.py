"""Several busy terminals in one worker process, each keeping a call in flight on its own session.

A process per busy terminal is the simplest client, but on a machine the client shares with the
server every transaction then wakes a process of its own, and with more terminals than cores those
wake-ups crowd the server out (docs/internals.md). Here one process per core sends each of its
terminals' calls and waits with poll(2) for whichever server answers first, as pgbench's threads do; a
result that arrives while another is handled is picked up in the same wake-up.

The calls are sent by the engine's pump (engines/pump.py): each terminal hands it a batch of calls, and
the pump sends the terminal's next call as soon as the previous one's result is in. A deferred
transaction in a batch goes to the pump's queue, which the process's deferred session runs. This
module's code runs only when a batch is used up, a call fails, or the run ends.
For PostgreSQL the pump is a C loop over libpq: in Python, the loop was most of the client's CPU per
transaction.

Only for what allows it: terminals without keying and think times, single-statement transactions
(server-side mode), and an engine whose sessions split a call in two (``Capabilities.split_calls``).
The terminal's rules are those of ``terminal.Terminal``: inputs drawn a batch ahead, samples, facts
and live counters written when the pump stops (not after each call), deferred transactions queued,
conflicts retried under the retry policy (the backoff waits on a timer, not in a sleep that would stop
the other terminals).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from maximus.driver.clock import Clock
from maximus.driver.retry import Result, RetryPolicy, failed
from maximus.driver.terminal import BATCH, Recorder, finish, finish_committed, record_deferred
from maximus.engines.base import Engine, Session
from maximus.engines.pump import DONE, END, Event, Pump
from maximus.records import Outcome

_STOP_POLL_S = 0.25
_NO_END = float("inf")


@dataclass
class _Caller:
    """One session's calls under the retry policy: what the pump was given, and a call being retried."""

    session: Session
    engine: Engine
    retry: RetryPolicy
    stops_when_broken: ClassVar[bool] = True  # every call after a lost connection's would fail at once
    slot: int = -1
    calls: list = field(default_factory=list)  # as the pump takes them: (sql, params), or queued ones
    given_from: int = 0  # where the pump started at the last give
    retrying: int = -1  # the index of the call waiting for its next attempt, or -1
    attempts: int = 0  # attempts made by that call so far
    first_started: float = 0.0  # when that call was first sent: its response time counts its retries
    again_at: float = 0.0

    def handle(self, pump: Pump, event: Event, end: float, now: float) -> list[Event] | None:
        """Take an event of the pump's for this session: the events of what it sends next, or None when
        it waits (for a backoff timer if ``again_at`` is set, else for nothing: its run is over)."""
        _, kind, index, times, error = event
        if index > self.given_from:
            self._committed(self.given_from, index, times)
        if kind == DONE:
            return self.given_all(pump, end, now)
        if kind == END:
            self.ended()
            return None
        started, attempts = self._first_attempt(index, times[-2])
        if self.rolled_back_by_rule(index, error):
            self._over(index, started, attempts, times[-1], Outcome.ROLLED_BACK)
            return self.give(pump, index + 1, end)
        wait = self.retry.backoff(error, attempts, self.engine.classify)
        if wait is None:
            self._over(index, started, attempts, times[-1], Outcome.FAILED, failed(error, attempts).error)
            if self.stops_when_broken and self.session.broken():  # and the loop would never wait
                self.ended()
                return None
            return self.give(pump, index + 1, end)
        self.retrying, self.attempts, self.first_started = index, attempts, started
        self.again_at = now + wait
        return None

    def resend(self, pump: Pump, end: float) -> list[Event]:
        """The backoff is over: the call being retried is sent again, even after the end of the run."""
        self.again_at = 0.0
        return self.give(pump, self.retrying, end, resend=True)

    def give(self, pump: Pump, start: int, end: float, resend: bool = False) -> list[Event]:
        self.given_from = start
        return pump.give(self.slot, self.calls, start, end, resend)

    def _committed(self, start: int, stop: int, times: list[float]) -> None:
        """Calls ``start`` to ``stop`` - 1 committed; the latest attempt of call n started at
        times[2 (n - start)] and finished at the next time."""
        if start == self.retrying:  # only the first call given can be a retry: its response time counts them all
            self._over(start, *self._first_attempt(start, times[0]), times[1])
            start, times = start + 1, times[2:]
        if start < stop:
            self._committed_at_once(start, stop, times)

    def _committed_at_once(self, start: int, stop: int, times: list[float]) -> None:
        """Calls committed at their first attempt, timed as in ``_committed``."""
        for n in range(start, stop):
            self._over(n, times[2 * (n - start)], 1, times[2 * (n - start) + 1])

    def _first_attempt(self, n: int, started: float) -> tuple[float, int]:
        """(started, attempts) of call ``n``, whose latest attempt started at ``started``."""
        if n != self.retrying:
            return started, 1
        self.retrying = -1
        return self.first_started, self.attempts + 1

    def rolled_back_by_rule(self, n: int, error: Any) -> bool:
        raise NotImplementedError

    def _over(self, n: int, started: float, attempts: int, finished: float, outcome: Outcome = Outcome.COMMITTED,
              error: str = "") -> None:
        raise NotImplementedError

    def given_all(self, pump: Pump, end: float, now: float) -> list[Event] | None:
        raise NotImplementedError

    def ended(self) -> None:
        raise NotImplementedError


@dataclass
class MultiplexedTerminal(_Caller):
    """One terminal of a multiplexed process: its own emulator and session, a batch of calls at a time."""

    index: int = 0
    emulator: Any = None
    recorder: Recorder | None = None  # shared by the process's terminals
    counters: Any = None
    batch: list = field(default_factory=list)  # (transaction, inputs) drawn for ``calls``
    names: list = field(default_factory=list)  # of the batch's transactions, as a run of them is recorded
    done: list = field(default_factory=list)  # over, not recorded yet

    def given_all(self, pump: Pump, end: float, now: float) -> list[Event] | None:
        """Record the batch, draw the next one and hand its calls to the pump."""
        self.record()
        if now >= end:
            return None
        self.batch = self.emulator.batch(BATCH)
        self.names = [transaction.name for transaction, _ in self.batch]
        self.calls = [(*transaction.send_args(inputs), (self.index, transaction.name, inputs)) if transaction.deferred
                      else transaction.send_args(inputs) for transaction, inputs in self.batch]
        return self.give(pump, 0, end)

    def ended(self) -> None:
        self.record()

    def rolled_back_by_rule(self, n: int, error: Any) -> bool:
        return self.batch[n][0].rolled_back_by_rule(error)

    def _committed_at_once(self, start: int, stop: int, times: list[float]) -> None:
        """Recorded as a run (``finish_committed``): nearly every call of a batch."""
        count = stop - start
        finish_committed(self, self.names[start:stop], times if len(times) == 2 * count else times[:2 * count],
                         self.batch[start:stop])

    def _over(self, n: int, started: float, attempts: int, finished: float, outcome: Outcome = Outcome.COMMITTED,
              error: str = "") -> None:
        transaction, inputs = self.batch[n]
        self.done.append((transaction, inputs, started, finished, Result(outcome, attempts, error)))

    def record(self) -> None:
        for transaction, inputs, started, finished, result in self.done:
            finish(self, transaction, inputs, started, finished, result)
        self.done = []


@dataclass
class DeferredRunner(_Caller):
    """2.7.2 inside the process: the deferred transactions the terminals reach join the pump's queue, and
    this session runs them in order (``Pump.queue_on``), each recorded from its queueing to its
    completion. No queue between processes, no process to wake, no event of its own for each one.

    ``calls`` is the queue, (sql, params, (terminal, name, inputs), queued at) as the pump appends them; an
    entry recorded is set to None, so that a long run keeps a pointer per deferred transaction, not its
    inputs. What a committed call returned (``Pump.values``) makes its result record (2.7.2.3).
    """

    stops_when_broken: ClassVar[bool] = False  # each queued call fails at once and is recorded as failed
    transactions: Mapping[str, Any] = field(default_factory=dict)  # by name, as the terminals queue them
    recorder: Recorder | None = None
    stopped: bool = False
    values: deque = field(default_factory=deque)  # of the committed calls not recorded yet, in order

    def attach(self, pump: Pump) -> list[Event]:
        pump.queue_on(self.slot, self.calls)
        return self.give(pump, len(self.calls), _NO_END)

    def handle(self, pump: Pump, event: Event, end: float, now: float) -> list[Event] | None:
        self.values.extend(pump.values(self.slot))
        return super().handle(pump, event, end, now)

    def collect(self, pump: Pump) -> None:
        """Record the queued calls completed since the last look."""
        times = pump.progress(self.slot)
        if times:
            self.values.extend(pump.values(self.slot))
            done = self.given_from + len(times) // 2
            self._committed(self.given_from, done, times)
            self.given_from = done

    def given_all(self, pump: Pump, end: float, now: float) -> None:
        raise RuntimeError("the queue slot reported DONE")  # it waits for the next queued call instead

    def ended(self) -> None:
        return None

    def rolled_back_by_rule(self, n: int, error: Any) -> bool:
        return self.transactions[self.calls[n][2][1]].rolled_back_by_rule(error)

    def give(self, pump: Pump, start: int, end: float, resend: bool = False) -> list[Event]:
        """Every queued call runs, even after the end of the run, unless the run was stopped (Ctrl-C)."""
        return super().give(pump, start, end if self.stopped else _NO_END, resend)

    def _over(self, n: int, started: float, attempts: int, finished: float, outcome: Outcome = Outcome.COMMITTED,
              error: str = "") -> None:
        _, _, (terminal, name, inputs), queued_at = self.calls[n]
        self.calls[n] = None
        output = self.transactions[name].deferred_result(inputs, self.values.popleft()) \
            if outcome is Outcome.COMMITTED else None
        if self.recorder is None:
            raise RuntimeError("a deferred transaction ended before its runner was given a recorder")
        record_deferred(self.recorder, terminal, name, queued_at, Result(outcome, attempts, error, output), finished)


def run_multiplexed(terminals: list[MultiplexedTerminal], deferred: DeferredRunner, clock: Clock,
                    end: float, pump: Pump | None = None) -> None:
    """Drive the terminals until the end of the run (or a stop), every one with its call in flight, and
    the deferred transactions they queue; ``pump`` defaults to the engine's."""
    now = clock.now
    pump = pump or deferred.engine.call_pump()
    callers = {}
    for caller in (*terminals, deferred):
        caller.slot = pump.add(caller.session)
        callers[caller.slot] = caller
    backoffs: list[tuple[float, int, _Caller]] = []  # (send again at, a tie-breaker, who)
    events: deque[Event] = deque(deferred.attach(pump))  # none: its queue is empty
    for terminal in terminals:
        events.extend(terminal.given_all(pump, end, now()) or ())
    stop_check = now() + _STOP_POLL_S
    while True:
        while events:
            event = events.popleft()
            caller = callers[event[0]]
            more = caller.handle(pump, event, end, now())
            if more:
                events.extend(more)
            elif caller.again_at:
                heapq.heappush(backoffs, (caller.again_at, id(caller), caller))
        deferred.collect(pump)
        if not (pump.in_flight() or backoffs):
            break
        wait = min(backoffs[0][0], stop_check) if backoffs else stop_check
        if pump.in_flight():
            events.extend(pump.wait(max(wait - now(), 0.0)))
        else:  # every session waits for a backoff timer
            clock.sleep(max(wait - now(), 0.0))
        while backoffs and backoffs[0][0] <= now():
            events.extend(heapq.heappop(backoffs)[2].resend(pump, end))
        if now() >= stop_check:
            stop_check = now() + _STOP_POLL_S
            if not clock.sleep(0):  # stopped: no new transaction starts, those in flight finish
                end = now()
                deferred.stopped = True
                pump.end_all(end)
