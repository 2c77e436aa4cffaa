"""One virtual user: run the workload's transactions against one session, time them, record them.

Runs inside a worker process. Everything it measures leaves through the ``Recorder`` in batches, so
an interrupted run still hands over what it measured.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from maximus.driver.clock import Clock
from maximus.driver.retry import RetryPolicy
from maximus.engines.base import Engine, Session
from maximus.records import Outcome, TxnSample, Window

_PR_SET_PDEATHSIG = 1  # prctl(2)
_FLUSH_EVERY_S = 0.5
_FLUSH_EVERY_SAMPLES = 2000
_BATCH = 32  # transactions a busy terminal runs between two bookkeeping rounds (and stop checks)


@dataclass
class Recorder:
    """Collects samples and in-window facts; ships them to the parent in batches.

    Samples travel as plain tuples (``to_wire``): pickling a dataclass costs about 3 µs a sample on
    each side, a tuple of numbers and strings a twentieth of that.
    """

    outbox: Any  # a multiprocessing queue
    window: Window
    origin: float
    samples: list[tuple] = field(default_factory=list)
    facts: Counter = field(default_factory=Counter)
    last_flush: float = 0.0

    def record(self, sample: TxnSample, facts: dict[str, int], now: float) -> None:
        self.samples.append(to_wire(sample))
        if facts and self.window.contains(sample) and sample.outcome is not Outcome.FAILED:
            self.facts.update({f"{sample.transaction}.{name}": value for name, value in facts.items()})
        if len(self.samples) >= _FLUSH_EVERY_SAMPLES or now - self.last_flush >= _FLUSH_EVERY_S:
            self.flush(now)

    def flush(self, now: float) -> None:
        if self.samples or self.facts:
            self.outbox.put(("samples", self.samples, dict(self.facts)))
            self.samples, self.facts = [], Counter()
        self.last_flush = now


def to_wire(sample: TxnSample) -> tuple:
    return (sample.terminal, sample.transaction, sample.start, sample.latency, sample.outcome.value,
            sample.attempts, sample.error)


def from_wire(fields: tuple) -> TxnSample:
    terminal, transaction, start, latency, outcome, attempts, error = fields
    return TxnSample(terminal, transaction, start, latency, Outcome(outcome), attempts, error)


def timed_transaction(session: Session, engine: Engine, retry: RetryPolicy, transaction: Any,
                      inputs: Any) -> tuple[Outcome, int, str]:
    def attempt() -> None:
        if getattr(transaction, "single_statement", False):
            transaction.execute(session, inputs)  # autocommit: the one statement is the transaction
            return
        session.begin(read_only=transaction.read_only)
        transaction.execute(session, inputs)
        session.commit()

    return retry.run(attempt, session.rollback, engine.classify)


def gated_transaction(gate: Any, session: Session, engine: Engine, retry: RetryPolicy, transaction: Any,
                      inputs: Any) -> tuple[Outcome, int, str]:
    """Queue at the gate when the engine asks for it: a fair queue instead of a sleeping busy handler."""
    if gate is None or not engine.gated(transaction.read_only):
        return timed_transaction(session, engine, retry, transaction, inputs)
    with gate:
        return timed_transaction(session, engine, retry, transaction, inputs)


@dataclass
class Terminal:
    """The loop of one terminal (5.2.5: keying time, transaction, think time)."""

    index: int
    emulator: Any
    session: Session
    engine: Engine
    clock: Clock
    recorder: Recorder
    end: float
    retry: RetryPolicy
    counters: Any  # shared array: [new orders done, transactions done] per terminal
    delivery_queue: Any
    writer_gate: Any | None

    def run(self) -> None:
        if self.emulator.pauses:
            self._run_paced()
        else:
            self._run_busy()
        self.recorder.flush(self.clock.now())

    def _run_paced(self) -> None:
        while self.clock.now() < self.end:
            transaction, inputs = self.emulator.next()
            if not self._pause(self.emulator.keying_time(transaction.name)):
                break
            started = self.clock.now()
            result = self._run(transaction, inputs, started)
            finish(self, transaction, inputs, started, self.clock.now(), result)
            if not self._pause(self.emulator.think_time(transaction.name)):
                break

    def _run_busy(self) -> None:
        """No keying or think times: transactions back to back, recorded ``_BATCH`` at a time.

        Between two round trips the server runs on the same CPUs and evicts the interpreter from the
        caches, so what runs there costs several times its usual CPU. The loop keeps only the call
        and two clock reads; samples, counters and facts are written after every batch, and a stop
        is looked for there too.
        """
        done: list[tuple] = []
        while self.clock.now() < self.end:
            if len(done) == _BATCH:
                self._finish_all(done)
                done = []
                if not self.clock.sleep(0):
                    break
            transaction, inputs = self.emulator.next()
            started = self.clock.now()
            result = self._run(transaction, inputs, started)
            done.append((transaction, inputs, started, self.clock.now(), result))
        self._finish_all(done)

    def _pause(self, seconds: float) -> bool:
        """Keying or think time, cut short at the end of the run: False when the terminal is done."""
        left = self.end - self.clock.now()
        return self.clock.sleep(min(seconds, left)) and seconds < left

    def _run(self, transaction: Any, inputs: Any, started: float) -> tuple[Outcome, int, str]:
        if transaction.deferred:
            return queue_deferred(self, transaction, inputs, started)
        return self._execute(transaction, inputs)

    def _finish_all(self, done: list[tuple]) -> None:
        for transaction, inputs, started, finished, result in done:
            finish(self, transaction, inputs, started, finished, result)

    def _execute(self, transaction: Any, inputs: Any) -> tuple[Outcome, int, str]:
        return gated_transaction(self.writer_gate, self.session, self.engine, self.retry, transaction, inputs)


def queue_deferred(terminal: Any, transaction: Any, inputs: Any, started: float) -> tuple[Outcome, int, str]:
    """2.7.2: a deferred transaction is queued for a deferred worker; the terminal's part is done."""
    terminal.delivery_queue.put((terminal.index, started - terminal.recorder.origin, transaction.name, inputs))
    return Outcome.COMMITTED, 1, ""


def finish(terminal: Any, transaction: Any, inputs: Any, started: float, finished: float,
           result: tuple[Outcome, int, str]) -> None:
    """Count a terminal's transaction on the live counters and record its sample and facts.

    ``terminal`` is a ``Terminal`` or an ``AsyncTerminal``: anything with ``index``, ``emulator``,
    ``counters`` and ``recorder``.
    """
    outcome, attempts, error = result
    if outcome is not Outcome.FAILED:
        slot = 2 * terminal.index
        terminal.counters[slot + 1] += 1
        if transaction.name == terminal.emulator.headline:  # the live counter shows New-Order
            terminal.counters[slot] += 1
    sample = TxnSample(terminal.index, transaction.name, started - terminal.recorder.origin, finished - started,
                       outcome, attempts, error)
    terminal.recorder.record(sample, transaction.facts(inputs), finished)


def ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops them in order and keeps their samples.

    They also die with the parent: a parent killed outright (SIGKILL) must not leave terminals
    hammering the database behind it.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the workers end with their run anyway
        pass
