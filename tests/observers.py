"""An experiment observer for tests: prints nothing, fails on a run that failed."""

from __future__ import annotations

import os
import signal
from typing import Any, Callable

from maximus.engines import _process


class Quiet:
    """An ``ExperimentObserver`` that prints nothing and fails the test at a run that ended with an error."""

    def run_starting(self, position: int, total: int, planned: Any) -> None:
        return None

    def run_finished(self, planned: Any, run_id: int | None, error: str | None) -> None:
        assert error is None, error

    def note(self, message: str) -> None:
        pass


class Stall:
    """A run ``Observer`` that stops a server's processes (SIGSTOP) ``at`` seconds after the run's time origin for
    ``seconds``, then lets them go on (SIGCONT): a database that stalls, as a checkpoint or a lock storm would make
    it. ``resume`` lets them go on whatever happened; the test calls it in a ``finally``."""

    def __init__(self, server_pid: Callable[[], int | None], at: float, seconds: float) -> None:
        self.server_pid, self.at, self.seconds = server_pid, at, seconds
        self.stopped: list[int] = []
        self.resumed = False

    def started(self, warmup_s: float, duration_s: float, headline: Any) -> None:
        return None

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None:
        if not self.stopped and elapsed_s >= self.at:
            pid = self.server_pid()
            assert pid is not None, "the server is not running"
            self.stopped = [pid, *_process.descendants(pid)]
            for process in self.stopped:
                os.kill(process, signal.SIGSTOP)
        elif self.stopped and not self.resumed and elapsed_s >= self.at + self.seconds:
            self.resume()

    def resume(self) -> None:
        for process in self.stopped:
            try:
                os.kill(process, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.resumed = True
