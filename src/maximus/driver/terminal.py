"""One virtual user: run the workload's transactions against one session, time them, record them.

Runs inside a worker process. Everything it measures leaves through the ``Recorder`` in batches, so
an interrupted run still hands over what it measured.
"""

from __future__ import annotations

import os
import time
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Sequence

from maximus.driver.clock import Clock
from maximus.driver.retry import Result, RetryPolicy
from maximus.driver.schedule import RateSchedule
from maximus.engines.base import Engine, Session
from maximus.records import DEFERRED_PREFIX, OUTCOME_OF, DeferredResult, Outcome, Window

_FLUSH_EVERY_S = 0.5
_FLUSH_EVERY_SAMPLES = 2000
BATCH = 64  # transactions a busy terminal draws, then runs, then records (and looks for a stop)


@dataclass
class Recorder:
    """Collects samples and in-window facts; ships them to the parent in batches.

    A sample is recorded as the tuple it travels as (``collected.Collected`` makes columns of it in the
    parent): a tuple of numbers and strings costs a twentieth of what a dataclass costs to build and
    pickle, on each side. A busy terminal's transactions committed at their first attempt, nearly all of
    them, travel as a run instead (``record_committed``), which is cheaper still.
    """

    outbox: Any  # a multiprocessing queue
    window: Window
    origin: float
    samples: list[tuple] = field(default_factory=list)
    runs: list[tuple] = field(default_factory=list)  # (terminal, names, times): see record_committed
    results: list[tuple] = field(default_factory=list)  # deferred transactions' result records: see record_result
    recorded: int = 0  # transactions in samples and runs
    facts: Counter = field(default_factory=Counter)  # by (transaction, fact)
    last_flush: float = 0.0

    def record(self, terminal: int, transaction: str, started: float, finished: float,
               result: Result, facts: dict[str, int] | None, now: float, intended: float | None = None) -> None:
        """One transaction, timed by the monotonic clock; its facts count when it did not fail and its
        whole response time lies in the measured window (5.4). ``intended``: when a fixed-rate schedule meant it
        to start."""
        outcome, attempts, error, _ = result
        start, latency = started - self.origin, finished - started
        self.samples.append((terminal, transaction, start, latency, outcome.value, attempts, error,
                             None if intended is None else intended - self.origin))
        self.recorded += 1
        if facts and outcome is not Outcome.FAILED and self.window.holds(start, latency):
            for name, value in facts.items():
                self.facts[transaction, name] += value
        self.flush_if_due(now)

    def record_committed(self, terminal: int, names: list[str], times: list[float],
                         drawn: Sequence[tuple[Any, Any]]) -> None:
        """``record`` for a run of transactions committed at their first attempt, one after the other, a
        busy terminal's usual batch: ``names[n]`` started at ``times[2 n]`` and finished at
        ``times[2 n + 1]``, as the pump timed it; ``drawn[n]`` is its (transaction, inputs).

        The run travels as it is and ``collected.Collected`` makes samples of it in the parent, and the facts of
        a run wholly in the window are summed by transaction type (``summed_facts``): less than half the
        cost of a sample tuple and a facts dict per transaction.
        """
        self.runs.append((terminal, names, array("d", times)))  # pickled as its bytes: a fifth of a list's cost
        self.recorded += len(names)
        first, last = times[0] - self.origin, times[-2] - self.origin  # when the first and the last started
        if self.window.start <= first and self.window.holds(last, times[-1] - times[-2]):
            self._add_facts(drawn)
        elif last + (times[-1] - times[-2]) >= self.window.start and first <= self.window.end:  # across an edge
            self._add_facts([row for row, started, finished in zip(drawn, times[0::2], times[1::2])
                             if self.window.holds(started - self.origin, finished - started)])
        self.flush_if_due(times[-1])

    def record_result(self, terminal: int, transaction: str, queued: float, completed: float, result: Result) -> None:
        """A deferred transaction's result record (2.7.2.3), its output as a dict (a named tuple's fields)."""
        record = result.output._asdict() if result.output is not None else None
        self.results.append((terminal, transaction, queued - self.origin, completed - self.origin,
                             result.outcome.value, record))

    def count_points(self, fact: str, seconds: Mapping[int, int]) -> None:
        """A fixed-rate schedule's points a terminal never started, as facts of the driver's own: their number
        (``schedule.<fact>``), and how many were due in each second from the origin (``schedule.<fact>_at.<s>``),
        from which the read side draws the backlog of every second."""
        self.facts["schedule", fact] += sum(seconds.values())
        for second, count in seconds.items():
            self.facts["schedule", f"{fact}_at.{second}"] += count

    def _add_facts(self, drawn: Iterable[tuple[Any, Any]]) -> None:
        by_transaction = defaultdict(list)
        for transaction, inputs in drawn:
            by_transaction[transaction].append(inputs)
        for transaction, inputs in by_transaction.items():
            for fact, value in transaction.summed_facts(inputs).items():
                self.facts[transaction.name, fact] += value

    def flush_if_due(self, now: float) -> None:
        if self.recorded >= _FLUSH_EVERY_SAMPLES or now - self.last_flush >= _FLUSH_EVERY_S:
            self.flush(now)

    def flush(self, now: float) -> None:
        if self.recorded or self.facts:
            facts = {f"{transaction}.{name}": value for (transaction, name), value in self.facts.items()}
            self.outbox.put(("samples", self.samples, facts, self.runs, self.results))
            self.samples, self.runs, self.results, self.recorded, self.facts = [], [], [], 0, Counter()
        self.last_flush = now


def result_from_wire(fields: tuple) -> DeferredResult:
    terminal, transaction, queued, completed, outcome, record = fields
    return DeferredResult(terminal, transaction, queued, completed, OUTCOME_OF[outcome], record)


Runner = Callable[[Any], Result]  # inputs -> what became of the transaction


def transaction_runner(session: Session, engine: Engine, retry: RetryPolicy, transaction: Any,
                       gate: Any = None, sleep: Callable[[float], Any] = time.sleep, whole: bool = False) -> Runner:
    """What runs one transaction type under the retry policy, queued at the gate when the engine asks
    for it (a fair queue instead of a sleeping busy handler).

    Built once per transaction type: between two round trips every Python frame counts (see
    ``Terminal._run_busy``), so a call goes through the retry loop, the transaction and the session
    and nothing else.
    ``whole``: the result's output is the transaction's whole screen, as a client-side run returns it, where its
    usual call returns less (a stored-function call's ``screen``): a crash test's success log needs it.
    """
    if getattr(transaction, "single_statement", False):  # autocommit: the one statement is the transaction
        attempt = partial(transaction.screen if whole and hasattr(transaction, "screen") else transaction.execute,
                          session)
    else:
        attempt = partial(_in_transaction, session, transaction)
    run = partial(retry.run, attempt, rollback=session.rollback, classify=engine.classify, sleep=sleep)
    if gate is not None and engine.gated(transaction.read_only):
        return partial(_holding, gate, run)
    return run


def _in_transaction(session: Session, transaction: Any, inputs: Any) -> Any:
    session.begin(read_only=transaction.read_only, one_snapshot=transaction.one_snapshot)
    output = transaction.execute(session, inputs)
    session.commit()
    return output


def _holding(gate: Any, run: Runner, inputs: Any) -> Result:
    with gate:
        return run(inputs)


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
    # None: the terminal runs its deferred transactions itself, on its own connection, once acknowledged
    delivery_queue: Any | None
    writer_gate: Any | None
    schedule: RateSchedule | None = None  # a fixed-rate run's: when each transaction should start
    runners: dict[Any, Runner] = field(default_factory=dict)  # by transaction, built on first use
    own_deferred: list[tuple[Any, Any, float]] = field(default_factory=list)  # (transaction, inputs, queued at)

    def run(self) -> None:
        if self.schedule is not None:
            self._run_scheduled(self.schedule)
        elif self.emulator.pauses:
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
            finished = self.clock.now()
            finish(self, transaction, inputs, started, finished, result)
            self._run_own_deferred()  # in the think time, as a deferred worker would
            if not self._pause(self.emulator.think_time(transaction.name) - (self.clock.now() - finished)):
                break

    def _run_scheduled(self, schedule: RateSchedule) -> None:
        """Each transaction at its intended start, or at once when the terminal is behind (issue #45).

        The warm-up's backlog is not carried into the measured window: the schedule's points of the warm-up that
        the window's start finds unstarted are skipped and counted (``schedule.warmup_backlog``). Those of the
        window left unstarted at its end are counted too (``schedule.unstarted``): nothing is dropped silently.
        """
        now, recorder = self.clock.now, self.recorder
        window_start = recorder.origin + recorder.window.start
        starts = schedule.starts(self.index, recorder.origin)
        intended = next(starts)
        while intended < self.end:
            if intended < window_start <= now():
                skipped, intended = schedule.skip(starts, intended, window_start, recorder.origin)
                recorder.count_points("warmup_backlog", skipped)
                continue
            transaction, inputs = self.emulator.next()  # drawn before the wait: the start is the call's
            if not self.clock.sleep(intended - now()):
                return  # stopped: the window ends here
            started = now()
            if started >= self.end:
                break
            result = self._run(transaction, inputs, started)
            finish(self, transaction, inputs, started, now(), result, intended)
            self._run_own_deferred()  # its time delays the next start, which its latency then shows
            intended = next(starts)
        recorder.count_points("unstarted", schedule.skip(starts, intended, self.end, recorder.origin)[0])

    def _run_busy(self) -> None:
        """No keying or think times: transactions back to back, drawn and recorded ``BATCH`` at a time.

        Between two round trips the server runs on the same CPUs and evicts the interpreter from the
        caches, so what runs there costs several times its usual CPU. Inputs are therefore drawn
        (and their call parameters converted) a batch ahead, and samples, counters and facts are
        written after the batch, where a stop is looked for too; the loop keeps only the call and
        two clock reads.
        """
        now, end, run = self.clock.now, self.end, self._run
        started = now()
        while started < end and self.clock.sleep(0):
            done = []
            for transaction, inputs in self.emulator.batch(BATCH):
                started = now()
                if started >= end:
                    break
                result = run(transaction, inputs, started)
                done.append((transaction, inputs, started, now(), result))
                if self.own_deferred:
                    self._run_own_deferred()
            self._finish_batch(done)

    def _finish_batch(self, done: list[tuple[Any, Any, float, float, Result]]) -> None:
        """A busy batch's transactions recorded: those committed at their first attempt, nearly all, as one run
        (``finish_committed``), a fifth of what a sample each costs (2.2 µs a transaction, most of a storage-bound
        run's recording); the others a sample each."""
        names: list[str] = []
        times: list[float] = []
        drawn: list[tuple[Any, Any]] = []
        for transaction, inputs, begun, finished, result in done:
            if result.outcome is Outcome.COMMITTED and result.attempts == 1:
                names.append(transaction.name)
                times += (begun, finished)
                drawn.append((transaction, inputs))
            else:
                finish(self, transaction, inputs, begun, finished, result)
        if names:
            finish_committed(self, names, times, drawn)

    def _pause(self, seconds: float) -> bool:
        """Keying or think time, cut short at the end of the run: False when the terminal is done."""
        left, seconds = self.end - self.clock.now(), max(seconds, 0.0)
        return self.clock.sleep(min(seconds, left)) and seconds < left

    def _run(self, transaction: Any, inputs: Any, started: float) -> Result:
        if transaction.deferred and self.delivery_queue is not None:
            return queue_deferred(self, transaction, inputs, started)
        if transaction.deferred:  # acknowledged at once (2.7.2.1), executed once its terminal's part is recorded
            self.own_deferred.append((transaction, inputs, started))
            return Result(Outcome.COMMITTED, 1)
        return (self.runners.get(transaction) or self._runner(transaction))(inputs)

    def _run_own_deferred(self) -> None:
        """The deferred transactions this terminal acknowledged, executed on its own session, each recorded from its
        queueing to its completion (2.7.2.2), as a deferred worker records them."""
        while self.own_deferred:
            transaction, inputs, queued_at = self.own_deferred.pop(0)
            result = (self.runners.get(transaction) or self._runner(transaction))(inputs)
            record_deferred(self.recorder, self.index, transaction.name, queued_at, result, self.clock.now())

    def _runner(self, transaction: Any) -> Runner:
        runner = transaction_runner(self.session, self.engine, self.retry, transaction, self.writer_gate,
                                    self.clock.sleep)
        self.runners[transaction] = runner
        return runner


def queue_deferred(terminal: Any, transaction: Any, inputs: Any, started: float) -> Result:
    """2.7.2: a deferred transaction is queued for a deferred worker; the terminal's part is done."""
    terminal.delivery_queue.put((terminal.index, started, transaction.name, inputs))  # CLOCK_MONOTONIC: system-wide
    return Result(Outcome.COMMITTED, 1)


def record_deferred(recorder: Recorder, terminal: int, name: str, queued_at: float, result: Result,
                    now: float) -> None:
    """2.7.2.2: a deferred transaction's sample, timed from its queueing to its completion; 2.7.2.3: its
    entry in the result file."""
    recorder.record(terminal, f"{DEFERRED_PREFIX}{name}", queued_at, now, result, None, now)
    recorder.record_result(terminal, name, queued_at, now, result)


def finish(terminal: Any, transaction: Any, inputs: Any, started: float, finished: float, result: Result,
           intended: float | None = None) -> None:
    """Count a terminal's transaction on the live counters and record its sample and facts.

    ``terminal`` is a ``Terminal``, a ``MultiplexedTerminal`` or an ``AsyncTerminal``: anything with
    ``index``, ``emulator``, ``counters`` and ``recorder``.
    """
    if result.outcome is not Outcome.FAILED:
        slot = 2 * terminal.index
        terminal.counters[slot + 1] += 1
        if transaction.name == terminal.emulator.headline:  # the live counter shows New-Order
            terminal.counters[slot] += 1
    terminal.recorder.record(terminal.index, transaction.name, started, finished, result,
                             transaction.summed_facts((inputs,)), finished, intended)


def finish_committed(terminal: Any, names: list[str], times: list[float], drawn: Sequence[tuple[Any, Any]]) -> None:
    """``finish`` for a run of transactions committed at their first attempt (``Recorder.record_committed``)."""
    terminal.recorder.record_committed(terminal.index, names, times, drawn)
    slot = 2 * terminal.index
    terminal.counters[slot + 1] += len(names)
    terminal.counters[slot] += names.count(terminal.emulator.headline)


# sched_setattr(2): its number on the architectures Maximus runs on, and the slice a scheduled terminal asks for
_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}
SCHEDULED_SLICE_NS = 100_000  # the shortest the kernel takes (100 µs)


def wake_on_time() -> bool:
    """Ask the kernel for a short slice for this worker (EEVDF's ``sched_runtime`` of the default policy, Linux 6.12
    and later; no privilege needed): a task's virtual deadline is its slice ahead, so a scheduled terminal that wakes
    at its intended start gets the CPU ahead of a busy process with the default slice (a few milliseconds), instead of
    waiting for it. False where the kernel or the machine does not take it: the terminal then wakes as any process.
    """
    import ctypes
    import platform
    import struct

    number = _SCHED_SETATTR.get(platform.machine())
    if number is None:
        return False
    # struct sched_attr (SCHED_ATTR_SIZE_VER1): size, policy (SCHED_OTHER), flags, nice (kept), priority, runtime (the
    # slice), deadline, period, utilisation clamps
    attr = struct.pack("=IIQiIQQQII", 56, 0, 0, os.getpriority(os.PRIO_PROCESS, 0), 0, SCHEDULED_SLICE_NS, 0, 0, 0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(number, 0, ctypes.c_char_p(attr), 0) == 0


def yield_to_the_server() -> None:
    """Run this worker under SCHED_BATCH: when its result arrives it waits for the CPU instead of
    preempting whatever runs there.

    On a machine the client shares with the server, what runs there is most often a server process
    in the middle of a transaction, holding locks that other terminals wait for; preempting it
    stretches every lock hold time by a slice of Python. On PostgreSQL with 4 terminals on 2 cores it
    makes about 10 % more New-Orders; with 8, the CPUs saturated, the default policy makes no more and
    costs the client more CPU (bench/README.md). The wait for the CPU is part of the response times
    the terminal records; only who waits changes.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError):  # not Linux: the default policy
        pass
