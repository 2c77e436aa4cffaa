"""Live feedback: progress bars while loading, a countdown and the live rate of the workload's headline transaction
(TPC-C: New-Orders/min) while running."""

from __future__ import annotations

import time
from collections import deque
from typing import Mapping

from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from maximus.records import Headline

_RATE_WINDOW_S = 5.0


class LoadBars:
    """One bar per table (``LoadProgress`` of the API)."""

    def __init__(self, console: Console) -> None:
        self._progress = Progress(TextColumn("{task.description:>12}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=console, transient=False)
        self._tasks: dict[str, TaskID] = {}

    def start(self, expected_rows: Mapping[str, int]) -> None:
        self._progress.start()
        for table, rows in expected_rows.items():
            self._tasks[table] = self._progress.add_task(table, total=rows)

    def advance(self, table: str, rows: int) -> None:
        self._progress.advance(self._tasks[table], rows)

    def finish(self) -> None:
        for task in self._tasks.values():  # order lines are estimated: close every bar at its count
            done = self._progress.tasks[task].completed
            self._progress.update(task, total=done)
        self._progress.stop()


class RunCountdown:
    """The driver's ``Observer``: phase, time left and the live rate of the headline's transaction over the last 5 s,
    in the headline's period (New-Orders/min for TPC-C)."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._live = Live(console=console, refresh_per_second=4, transient=True)
        self._history: deque[tuple[float, int]] = deque()
        self._warmup = self._duration = 0.0
        self._per_seconds, self._unit = 60.0, "New-Orders/min"

    def started(self, warmup_s: float, duration_s: float, headline: Headline) -> None:
        self._warmup, self._duration = warmup_s, duration_s
        self._per_seconds, self._unit = headline.per_seconds, f"{headline.per_second_name}/{headline.period}"
        self._live.start()

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None:
        now = time.monotonic()
        self._history.append((now, headline_done))
        while len(self._history) > 2 and now - self._history[0][0] > _RATE_WINDOW_S:
            self._history.popleft()
        self._live.update(self._line(elapsed_s, headline_done, all_done))

    def _line(self, elapsed: float, headline_done: int, all_done: int) -> str:
        (t0, n0), (t1, n1) = self._history[0], self._history[-1]
        rate = (n1 - n0) / (t1 - t0) * self._per_seconds if t1 > t0 else 0.0
        if elapsed < self._warmup:
            phase = f"[yellow]warm-up[/] {self._warmup - elapsed:4.0f} s left"
        else:
            phase = f"[green]measuring[/] {max(self._warmup + self._duration - elapsed, 0):4.0f} s left"
        return f"{phase} │ [bold]{rate:,.0f}[/] {self._unit} (last 5 s) │ {all_done:,} transactions"

    def stop(self) -> None:
        self._live.stop()
