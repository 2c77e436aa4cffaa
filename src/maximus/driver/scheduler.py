"""Starts the terminals and the deferred workers in processes, releases them together, collects.

Timeline: workers connect and report ready; the parent fixes the time origin and releases them;
warm-up runs from the origin, then the measured window; terminals stop starting transactions at its
end. Ctrl-C (or ``stop()``) ends the run early: workers finish their transaction and hand over
their samples, and the run is marked interrupted. A monitor, when given, starts sampling just
before the release (it sees the workers' process ids) and stops after every worker has finished.

A fault ends the run early too, and fails it: the engine's watch (``Engine.watch``: the server gone,
the database file gone) is looked at about once a second and once at the end, and every failed
transaction's error is shown to ``Engine.fault``. The first cause found is the run's first error.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing.connection
import queue
import resource
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from maximus.driver.async_terminal import AsyncTerminal, run_terminals
from maximus.driver.clock import SystemClock
from maximus.driver.collected import Collected
from maximus.driver.multiplexed import DeferredRunner, MultiplexedTerminal, run_multiplexed
from maximus.driver.retry import RetryPolicy
from maximus.driver.schedule import RateSchedule
from maximus.driver.terminal import (Recorder, Terminal, record_deferred, result_from_wire, transaction_runner,
                                     wake_on_time, yield_to_the_server)
from maximus.engines.base import Engine
from maximus.errors import EngineError
from maximus.records import DeferredResult, Headline, Outcome, RunStatus, Window
from maximus.samples import Samples
from maximus import workers
from maximus.workers import ignore_interrupts, spawning
from maximus.workloads.base import Workload

_READY_TIMEOUT_S = 120.0
_WATCH_EVERY_S = 1.0
_FAILED = Outcome.FAILED.value


@dataclass(frozen=True)
class DriveSpec:
    engine: Engine
    workload: Workload  # travels to the terminal processes as it is: a workload need not be registered there
    settings: Any  # the workload's run settings, shared by every terminal
    terminals: int
    warmup_s: float
    duration_s: float
    # Processes. Multiplexed terminal processes run their own deferred transactions; with none, so does each
    # terminal, on its own connection (an engine whose settings allow only one: Engine.one_connection).
    deferred_workers: int = 1
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # "process": one terminal per process; "multiplexed": busy terminals sharing a process, a call in
    # flight on each (engines with split calls); "asyncio": keyed terminals sharing a process on an
    # event loop (engines with asynchronous sessions). The two shared kinds need server-side mode.
    hosting: str = "process"
    terminals_per_process: int = 1
    schedule: RateSchedule | None = None  # a fixed-rate run's (process hosting): when each transaction should start
    # Several client hosts (issue #45): the terminals of 0..terminals-1 this driver runs (another host runs the rest;
    # None: all). Their time origin is agreed once every host's workers are ready (``Run``'s ``release``).
    indices: tuple[int, ...] | None = None

    def shares(self) -> list[list[int]]:
        """The terminal indices each terminal process hosts."""
        mine = list(range(self.terminals)) if self.indices is None else list(self.indices)
        size = max(1, self.terminals_per_process if self.hosting != "process" else 1)
        return [mine[first:first + size] for first in range(0, len(mine), size)]


@dataclass
class DriveResult:
    samples: Samples  # in the order of their starts
    facts: dict[str, int]
    window: Window
    status: RunStatus
    errors: list[str]
    elapsed_s: float
    deferred: list[DeferredResult] = field(default_factory=list)  # the deferred transactions' result file
    workers_cpu_s: float = 0.0  # the CPU its worker processes reported as they ended, start-up included


class Observer(Protocol):
    """Live view of a run: called about twice a second from the parent."""

    def started(self, warmup_s: float, duration_s: float, headline: Headline) -> None: ...

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None: ...


class RunMonitor(Protocol):
    """Samples statistics beside the run (``maximus.samplers.monitor.Monitor``); never raises."""

    def start(self, origin: float, client_pids: Sequence[int]) -> None: ...

    def stop(self) -> None: ...


# Where a run's workers' records go as they arrive, instead of being kept for its result: a client host streams them
# to the coordinator (``hosts.host.Outbox``). Arguments: samples, runs of committed transactions, deferred results (as
# they travel, ``terminal.Recorder``) and in-window facts.
Sink = Callable[[list[tuple], list[tuple], list[tuple], dict[str, int]], None]


class _Channels:
    def __init__(self, context: Any, terminals: int, single_writer: bool) -> None:
        self.outbox = context.Queue()
        self.deliveries = context.Queue()
        self.go = context.Event()
        self.stop = context.Event()
        self.origin = context.Value("d", 0.0, lock=False)
        self.counters = context.RawArray("q", 2 * terminals)
        self.writer_gate = context.Lock() if single_writer else None


def _terminal_main(spec: DriveSpec, worker: int, channels: _Channels) -> None:
    ignore_interrupts(termination=True)
    [index] = spec.shares()[worker]
    # A scheduled terminal must wake at its intended starts, not wait for the CPU. An embedded engine has no server to
    # yield to: its work runs in the terminal, which would wait for the CPU after every fsync, holding the write lock
    if spec.schedule is None and spec.engine.capabilities.server_process:
        yield_to_the_server()
    elif spec.schedule is not None:
        wake_on_time()
    try:
        session = spec.engine.connect()
        emulator = spec.workload.emulator(spec.settings, index, spec.engine.dialect)
    except Exception as error:
        channels.outbox.put(("fatal", f"terminal {index} could not start: {type(error).__name__}: {error}"))
        return
    origin, clock, window = _released(spec, channels, worker)
    terminal = Terminal(index, emulator, session, spec.engine, clock, Recorder(channels.outbox, window, origin),
                        origin + window.end, spec.retry, channels.counters,
                        channels.deliveries if spec.deferred_workers else None, channels.writer_gate, spec.schedule)
    _guarded(terminal.run, channels, index)
    session.close()
    _report_cpu(channels)


def _released(spec: DriveSpec, channels: _Channels, ready_as: int) -> tuple[float, SystemClock, Window]:
    """Report ready, wait for the release, sleep until the time origin: (origin, clock, window)."""
    gc.freeze()  # what the worker made to start (modules, session) lives to its end: the collector need not scan it
    channels.outbox.put(("ready", ready_as))
    channels.go.wait()
    origin = channels.origin.value
    clock = SystemClock(channels.stop)
    clock.sleep(origin - clock.now())
    return origin, clock, Window(spec.warmup_s, spec.warmup_s + spec.duration_s)


def _multiplexed_main(spec: DriveSpec, worker: int, channels: _Channels) -> None:
    """A process of busy terminals, each with its own session and a call in flight (driver.multiplexed)."""
    ignore_interrupts(termination=True)
    yield_to_the_server()
    indices = spec.shares()[worker]
    try:
        sessions = [spec.engine.connect() for _ in range(len(indices) + 1)]  # the last for deferred transactions
        workload = spec.workload
        emulators = [workload.emulator(spec.settings, index, spec.engine.dialect) for index in indices]
        transactions = workload.transactions(spec.engine.dialect, spec.settings)
    except Exception as error:
        channels.outbox.put(("fatal", f"terminal process {worker} could not start: {type(error).__name__}: {error}"))
        return
    origin, clock, window = _released(spec, channels, worker)
    recorder = Recorder(channels.outbox, window, origin)
    deferred = DeferredRunner(sessions[-1], spec.engine, spec.retry, transactions=transactions, recorder=recorder)
    terminals = [MultiplexedTerminal(session, spec.engine, spec.retry, index=index, emulator=emulator,
                                     recorder=recorder, counters=channels.counters)
                 for index, emulator, session in zip(indices, emulators, sessions)]
    _guarded(lambda: run_multiplexed(terminals, deferred, clock, origin + window.end), channels, worker)
    recorder.flush(clock.now())
    for session in sessions:
        session.close()
    _report_cpu(channels)


def _async_main(spec: DriveSpec, worker: int, channels: _Channels) -> None:
    """A process of asynchronous terminals: each with its own session, all on one event loop."""
    ignore_interrupts(termination=True)
    yield_to_the_server()
    asyncio.run(_async_terminals(spec, spec.shares()[worker], channels, worker))
    _report_cpu(channels)


async def _async_terminals(spec: DriveSpec, indices: Sequence[int], channels: _Channels, worker: int) -> None:
    try:
        sessions = [await spec.engine.connect_async() for _ in indices]
        workload = spec.workload
        emulators = [workload.emulator(spec.settings, index, spec.engine.dialect) for index in indices]
    except Exception as error:
        channels.outbox.put(("fatal", f"terminal process {worker} could not start: {type(error).__name__}: {error}"))
        return
    channels.outbox.put(("ready", worker))
    await asyncio.get_running_loop().run_in_executor(None, channels.go.wait)
    origin = channels.origin.value
    window = Window(spec.warmup_s, spec.warmup_s + spec.duration_s)
    await asyncio.sleep(max(origin - time.monotonic(), 0))
    recorder = Recorder(channels.outbox, window, origin)
    terminals = [AsyncTerminal(index, emulator, session, spec.engine, recorder, origin + window.end, spec.retry,
                               channels.counters, channels.deliveries, channels.stop)
                 for index, emulator, session in zip(indices, emulators, sessions)]
    try:
        await run_terminals(terminals)
    except Exception:
        channels.outbox.put(("fatal", f"terminal process {worker} crashed:\n{traceback.format_exc()}"))
    recorder.flush(time.monotonic())
    for session in sessions:
        await session.close()


def _deferred_main(spec: DriveSpec, worker: int, channels: _Channels) -> None:
    """2.7.2: executes queued deferred transactions; records queue-to-completion time."""
    ignore_interrupts(termination=True)
    if spec.engine.capabilities.server_process:  # as a terminal's (_terminal_main)
        yield_to_the_server()
    try:
        session = spec.engine.connect()
        transactions = spec.workload.transactions(spec.engine.dialect, spec.settings)
    except Exception as error:
        channels.outbox.put(("fatal", f"deferred worker {worker} could not start: {error}"))
        return
    gc.freeze()  # as a terminal does (_released)
    channels.outbox.put(("ready", -1 - worker))
    channels.go.wait()
    origin = channels.origin.value
    recorder = Recorder(channels.outbox, Window(spec.warmup_s, spec.warmup_s + spec.duration_s), origin)
    _guarded(lambda: _serve_deferred(spec, session, transactions, channels, recorder), channels, -1 - worker)
    recorder.flush(time.monotonic())
    session.close()
    _report_cpu(channels)


def _serve_deferred(spec: DriveSpec, session: Any, transactions: Mapping[str, Any], channels: _Channels,
                    recorder: Recorder) -> None:
    sleep = SystemClock(channels.stop).sleep  # a back-off a stop interrupts
    runners = {name: transaction_runner(session, spec.engine, spec.retry, transaction, channels.writer_gate, sleep)
               for name, transaction in transactions.items()}
    while (request := channels.deliveries.get()) is not None:
        if channels.stop.is_set():
            continue  # interrupted: drain the queue without executing, so the workers can exit
        terminal, queued_at, name, inputs = request
        result = runners[name](inputs)
        record_deferred(recorder, terminal, name, queued_at, result, time.monotonic())


def _report_cpu(channels: _Channels) -> None:
    """The worker's CPU, start-up included, for a client host that tells what its terminals cost
    (``driver.hosts.host``): a worker forked from the fork server (``workers.context``) is the server's child, and
    so missing from the run process's RUSAGE_CHILDREN."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    channels.outbox.put(("cpu", usage.ru_utime + usage.ru_stime))


def _guarded(body: Any, channels: _Channels, index: int) -> None:
    try:
        body()
    except Exception:
        channels.outbox.put(("fatal", f"worker {index} crashed:\n{traceback.format_exc()}"))


class Run:
    """One driven run: start, observe, collect. ``stop()`` ends it early (interrupted).

    ``release``, for one of several hosts that drive a run together (``driver.hosts``): called once every worker is
    ready, it waits for the other hosts and returns the time origin they agreed, on this host's CLOCK_MONOTONIC.
    Without it the origin is picked here. An origin agreed before the workers start would be missed by a host whose
    workers start late: on a busy machine a host took 2.4 s to start its terminals' process and connect it.
    """

    def __init__(self, spec: DriveSpec, observer: Observer | None = None, monitor: RunMonitor | None = None,
                 watch: Callable[[], str | None] | None = None, release: Callable[[], float] | None = None,
                 sink: Sink | None = None) -> None:
        self.spec = spec
        self.release = release
        self.sink = sink  # given: the records go there, and the result holds none of them
        self.observer = observer
        self.monitor = monitor
        self.watch = watch or (lambda: None)
        self.fault: str | None = None  # the first cause found that the engine or its data failed
        self._causes: dict[str, str | None] = {}  # Engine.fault's answer, by error text
        self._watched_at = 0.0
        self.context = workers.context()
        # A workload that writes nothing has no writer for its readers to block, nor to wait for: no gate
        gated = spec.engine.capabilities.single_writer and bool(spec.workload.write_transactions())
        self.channels = _Channels(self.context, spec.terminals, gated)
        self.collected = Collected()
        self.wire_results: list[tuple] = []  # deferred transactions' result records (Recorder.record_result), few
        self.facts: dict[str, int] = {}
        self.workers_cpu_s = 0.0
        self.errors: list[str] = []
        self.interrupted = False
        self.stopped_at: float | None = None  # time.monotonic() of the first stop

    def execute(self) -> DriveResult:
        started = time.monotonic()
        host = {"process": _terminal_main, "multiplexed": _multiplexed_main, "asyncio": _async_main}[self.spec.hosting]
        terminals: list = []
        deferred: list = []
        previous = _on_ctrl_c(self._ctrl_c)
        try:
            with spawning():  # a Ctrl-C to the process group meanwhile is this process's alone, once they started
                terminals += [self._process(host, i) for i in range(len(self.spec.shares()))]
                deferred += [self._process(_deferred_main, i) for i in range(self.spec.deferred_workers)]
            self._start(terminals + deferred)
            self._collect_until_done(terminals)
            for _ in deferred:
                self.channels.deliveries.put(None)
            self._collect_until_done(deferred)
        except KeyboardInterrupt:
            self._interrupt(terminals, deferred)
        finally:
            _on_ctrl_c(previous)
            self._reap(terminals + deferred)
            if self.monitor:
                self.monitor.stop()  # after the workers are gone: the last reading covers all their work
        self._found(self.watch())  # a fault since the last look
        return self._result(time.monotonic() - started)

    def _ctrl_c(self, signum: int, frame: Any) -> None:
        """The first Ctrl-C stops the run in order; a second one stops waiting for the workers.

        A KeyboardInterrupt raised wherever the parent happens to be could cut a message from a
        worker in half and leave the queue unreadable, so the first one only sets the stop.
        """
        if self.interrupted:
            raise KeyboardInterrupt
        self.stop()

    def stop(self) -> None:
        """End the run early; workers still waiting for the start are released and exit at once."""
        self.interrupted = True
        self._halt()

    def _halt(self) -> None:
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
        self.channels.stop.set()
        self.channels.go.set()

    def _found(self, cause: str | None) -> None:
        """The first fault ends the run: what follows it would measure the fault, not the database."""
        if cause and self.fault is None:
            self.fault = cause
            self._halt()

    def _look_at(self, samples: list[tuple]) -> None:
        """The errors of failed transactions (and of workers that crashed, ``_explain``): a fault the engine names
        in one is confirmed by the watch, whose cause is the more precise one (the server's own words)."""
        for sample in samples:
            if sample[4] != _FAILED or self.fault:
                continue
            self._explain(sample[6])

    def _explain(self, error: str) -> None:
        """A fault when the engine says the error is one; each text is shown to it once."""
        if error not in self._causes:
            self._causes[error] = self.spec.engine.fault(error)
        if self._causes[error]:
            self._found(self.watch() or self._causes[error])

    def _watch_now_and_then(self) -> None:
        now = time.monotonic()
        if now - self._watched_at >= _WATCH_EVERY_S:
            self._watched_at = now
            self._found(self.watch())

    def _process(self, target: Any, index: int) -> Any:
        return workers.start(self.context, target, (self.spec, index, self.channels))

    def _start(self, processes: list) -> None:
        ready, deadline = 0, time.monotonic() + _READY_TIMEOUT_S
        while ready < len(processes):
            message = self._next_message(timeout=0.2)
            if message and message[0] == "ready":
                ready += 1
            if self.interrupted:  # Ctrl-C before the start: the released workers exit at once
                return
            if self.errors or time.monotonic() > deadline or not all(p.is_alive() for p in processes):
                self.stop()
                self._found(self.watch())  # a server that died as the terminals started is the cause, not them
                raise EngineError(self.fault or (self.errors[0] if self.errors else "a worker process failed to "
                                                 "start"))
        workers.unlink_semaphores(self.channels)  # every worker has them open: a group's SIGKILL leaves no name
        self.channels.origin.value = self.release() if self.release else time.monotonic() + 0.05
        if self.monitor:  # its first reading comes before any transaction starts
            self.monitor.start(self.channels.origin.value, [p.pid for p in processes])
        self.channels.go.set()
        if self.observer:
            self.observer.started(self.spec.warmup_s, self.spec.duration_s, self.spec.workload.headline)

    def _collect_until_done(self, processes: list) -> None:
        origin = self.channels.origin.value
        while live := [process for process in processes if process.is_alive()]:
            self._next_message_or_end(live, timeout=0.25)
            self._watch_now_and_then()
            if self.observer:
                counters = self.channels.counters
                self.observer.tick(time.monotonic() - origin, sum(counters[0::2]), sum(counters[1::2]))
        self._drain(timeout=0)  # what they sent is all in the queue's pipe: a worker ends once its queue is flushed

    def _next_message_or_end(self, live: list, timeout: float) -> None:
        """The next message, or the end of one of the ``live`` workers, whichever comes first: waiting out the
        timeout after the last worker ended added up to half a second to every run."""
        reader = self.channels.outbox._reader  # type: ignore[attr-defined]  # the pipe Queue.get reads
        if reader in multiprocessing.connection.wait([reader, *(process.sentinel for process in live)], timeout):
            self._next_message(timeout=0)

    def _next_message(self, timeout: float) -> tuple | None:
        try:
            message = self.channels.outbox.get(timeout=timeout)
        except queue.Empty:
            return None
        if message[0] == "samples":
            self._look_at(message[1])
            if self.sink is not None:
                self.sink(message[1], message[3], message[4], message[2])
                return message
            self.collected.add(message[1], message[3], self.channels.origin.value)
            self.wire_results.extend(message[4])
            for name, value in message[2].items():
                self.facts[name] = self.facts.get(name, 0) + value
        elif message[0] == "cpu":
            self.workers_cpu_s += message[1]
        elif message[0] == "fatal":
            self.errors.append(message[1])
            self._explain(message[1])
        return message

    def _drain(self, timeout: float = 0.05) -> None:
        while self._next_message(timeout=timeout) is not None:
            pass

    def _interrupt(self, terminals: list, deferred: list) -> None:
        self.stop()
        for _ in deferred:
            self.channels.deliveries.put(None)
        try:
            self._collect_until_done(terminals + deferred)
        except KeyboardInterrupt:  # a second Ctrl-C: do not wait any longer
            pass

    def _reap(self, processes: list) -> None:
        self._drain(timeout=0.05 if any(process.is_alive() for process in processes) else 0)
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():  # stuck: it ignores SIGTERM, as it leaves stopping to this process
                process.kill()
                process.join(timeout=5)

    def _result(self, elapsed: float) -> DriveResult:
        window = self._measured_window()
        errors = [self.fault, *self.errors] if self.fault else self.errors
        if errors:
            status = RunStatus.FAILED
        elif self.interrupted:
            status = RunStatus.INTERRUPTED
        else:
            status = RunStatus.COMPLETE
        deferred = sorted(map(result_from_wire, self.wire_results), key=lambda r: r.queued)
        self.wire_results = []
        return DriveResult(self.collected.samples(), self.facts, window, status, errors, elapsed, deferred,
                           self.workers_cpu_s)

    def _measured_window(self) -> Window:
        """The planned window, cut at the stop of a run interrupted or ended by a fault: its rates are over the
        time it measured, not over seconds it never ran. A stop before the window leaves it empty."""
        planned = Window(self.spec.warmup_s, self.spec.warmup_s + self.spec.duration_s)
        origin = self.channels.origin.value
        if self.stopped_at is None:
            return planned
        if not origin:  # stopped before the release: no time origin, nothing measured
            return Window(planned.start, planned.start)
        return Window(planned.start, min(planned.end, max(planned.start, self.stopped_at - origin)))


def _on_ctrl_c(handler: Any) -> Any:
    """Install a SIGINT handler and return the one it replaces (only the main thread may)."""
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, handler)


def drive(spec: DriveSpec, observer: Observer | None = None, monitor: RunMonitor | None = None,
          watch: Callable[[], str | None] | None = None) -> DriveResult:
    return Run(spec, observer, monitor, watch).execute()


__all__ = ["DriveResult", "DriveSpec", "Observer", "Outcome", "Run", "RunMonitor", "Sink", "drive"]
