"""The terminals of a crash test (TPC-C 3.5.4): busy, untimed, each appending to its own success log, and killed.

Each terminal process runs the workload's transactions back to back (no keying or think times: the more commits
in flight, the more a crash can lose) and, after each outcome it was told, writes the workload's success entry to a
file of its own with one ``write(2)``: the entry is in the kernel once the call returns, so it survives the
process's own SIGKILL and a crash of the server. An entry is written only after its outcome was acknowledged, so a
lost entry can hide a loss but never invent one. Nothing else leaves the process: no samples, no queue a kill could
leave half written. The crash ends them all (``CrashLoad.kill``).
"""

from __future__ import annotations

import os
import queue
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from maximus.driver.retry import RetryPolicy
from maximus.driver.terminal import Runner, transaction_runner, yield_to_the_server
from maximus.engines.base import Engine
from maximus.errors import EngineError
from maximus import workers
from maximus.workers import ignore_interrupts, spawning

READY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class CrashLoadSpec:
    engine: Engine
    workload: Any  # maximus.workloads.base.Workload: travels to the terminal processes as it is
    run_settings: Any
    terminals: int
    log_dir: Path  # the success logs, one file per terminal, on a file system the crash cannot touch
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def log_path(self, terminal: int) -> Path:
        return self.log_dir / f"terminal-{terminal}.log"


def _terminal_main(spec: CrashLoadSpec, index: int, ready: Any, go: Any, gate: Any) -> None:
    ignore_interrupts(termination=True)
    yield_to_the_server()
    try:
        session = spec.engine.connect()
        emulator = spec.workload.emulator(spec.run_settings, index, spec.engine.dialect)
        log = os.open(spec.log_path(index), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except Exception as error:
        ready.put(f"terminal {index} could not start: {type(error).__name__}: {error}")
        return
    ready.put(None)
    go.wait()
    runners: dict[Any, Runner] = {}
    entry_of = spec.workload.success_entry
    while True:
        transaction, inputs = emulator.next()
        runner = runners.get(transaction)
        if runner is None:
            runner = runners[transaction] = transaction_runner(session, spec.engine, spec.retry, transaction, gate,
                                                               whole=True)
        result = runner(inputs)
        entry = entry_of(transaction.name, result.outcome, inputs, result.output)
        if entry is not None:
            os.write(log, (entry + "\n").encode())


class CrashLoad:
    """The terminal processes of one crash test: started and released together, killed together."""

    def __init__(self, spec: CrashLoadSpec) -> None:
        self.spec = spec
        self.context = workers.context()
        self.processes: list[Any] = []
        self.released_at: float | None = None

    def start(self) -> None:
        """Every terminal connected and ready, then released; a terminal that cannot start is one line."""
        ready, go = self.context.Queue(), self.context.Event()
        gate = self.context.Lock() if self.spec.engine.capabilities.single_writer else None
        with spawning():
            for index in range(self.spec.terminals):
                self.processes.append(workers.start(self.context, _terminal_main, (self.spec, index, ready, go, gate)))
        deadline, waiting = time.monotonic() + READY_TIMEOUT_S, len(self.processes)
        while waiting:
            try:
                answer = ready.get(timeout=0.2)
            except queue.Empty:
                answer = self._not_starting(deadline)
                if answer is None:
                    continue
            if answer is not None:
                self.kill()
                raise EngineError(answer)
            waiting -= 1
        workers.unlink_semaphores((ready, go, gate))  # every terminal has them open (``workers``)
        go.set()
        self.released_at = time.monotonic()

    def _not_starting(self, deadline: float) -> str | None:
        """Why the terminals are not all ready yet, when they never will be: one ended, or the time is up."""
        ended = [process for process in self.processes if not process.is_alive()]
        if ended:
            return f"a terminal of the crash test ended before it was ready (exit code {ended[0].exitcode})"
        if time.monotonic() > deadline:
            return f"the terminals of the crash test were not ready within {READY_TIMEOUT_S:g} s"
        return None

    def kill(self) -> None:
        """SIGKILL every terminal at once and wait for them: they hold the database's files (an embedded engine's)
        and must not write another byte."""
        for process in self.processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGKILL)
        for process in self.processes:
            process.join(timeout=10)

    def running(self) -> int:
        return sum(1 for process in self.processes if process.is_alive())

    def acknowledged(self) -> int:
        """The success entries written so far (what the live counter shows)."""
        count = 0
        for index in range(self.spec.terminals):
            try:
                count += self.spec.log_path(index).read_bytes().count(b"\n")
            except OSError:
                pass
        return count

    def entries(self) -> Iterator[str]:
        """Every success entry the terminals wrote, terminal after terminal, each in its order."""
        for index in range(self.spec.terminals):
            path = self.spec.log_path(index)
            if path.exists():
                yield from path.read_text().split("\n")[:-1]  # a line the kill cut short is no entry
