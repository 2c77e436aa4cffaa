"""A fixed-rate run against its schedule (issue #45): the rate achieved, the backlog and late starts over time, the
scheduler's own error, and the verdict: "rate sustained" or "not sustainable at R".

Everything is recomputed from the stored raw samples (each with its intended start, ``TxnSample.intended``) and the
two counts the terminals kept of the schedule's points they never started (``schedule.warmup_backlog`` and
``schedule.unstarted`` among the run's facts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from maximus.records import ARRIVALS_OPTION, RATE, RunSpec, TxnSample, Window
from maximus.samples import Samples, samples_of

ACHIEVED_AT_LEAST = 0.99  # of the target rate, for "rate sustained"
LATE_S = 0.001  # a start later than its intended one by more than this is late
WARMUP_BACKLOG, UNSTARTED = "schedule.warmup_backlog", "schedule.unstarted"


@dataclass(frozen=True)
class RateFigures:
    target: float  # transactions per second the schedule asked of all terminals
    arrivals: str  # regular or poisson
    terminals: int
    achieved: float  # the terminals' completed transactions per second in the measured window
    scheduled: int  # the schedule's points in the window: Poisson arrivals make them differ from target x seconds
    done: int  # of those, the transactions completed (committed or rolled back), whenever they ended
    backlog_at_start: int  # transactions due and not started at the window's start
    backlog_at_end: int  # ... at its end, those its terminals never started included
    warmup_backlog: int  # the warm-up's points skipped at the window's start: not carried into it
    unstarted: int  # the window's points its terminals never started, the run over
    backlog: tuple[tuple[int, int], ...]  # (second from the origin, transactions due and not started at its end)
    late: tuple[tuple[int, int], ...]  # (second from the origin, starts in it later than intended by LATE_S)
    start_error_p99: float  # seconds: the scheduler's own lateness where the terminal was idle; nan without any

    @property
    def ratio(self) -> float:
        """The share of the window's scheduled transactions done."""
        return self.done / self.scheduled if self.scheduled else 0.0

    @property
    def backlog_growth(self) -> int:
        return self.backlog_at_end - self.backlog_at_start

    @property
    def kept_up(self) -> bool:
        """At least 99 % of the window's scheduled transactions done, a terminal's last one due as the window ended
        aside: each may be in the middle of its previous transaction then, on time, and leave it unstarted."""
        return self.done + min(self.unstarted, self.terminals) >= ACHIEVED_AT_LEAST * self.scheduled

    @property
    def sustained(self) -> bool:
        """The schedule kept up with (``kept_up``) and a backlog that did not grow over the window (by more than one
        transaction a terminal, for the same reason)."""
        return self.kept_up and self.backlog_growth <= self.terminals

    @property
    def verdict(self) -> str:
        achieved = f"{self.achieved:,.1f}/s achieved, {100 * self.ratio:.1f} % of the {self.scheduled:,} scheduled done"
        if self.sustained:
            return f"rate sustained at {self.target:,g}/s: {achieved}"
        why = [achieved] if not self.kept_up else []
        if self.backlog_growth > self.terminals:
            why.append(f"the backlog grew by {self.backlog_growth:,} over the window")
        return f"not sustainable at {self.target:,g}/s: {', '.join(why)}"


def scheduled(spec: RunSpec) -> tuple[float, str] | None:
    """A fixed-rate run's target and arrivals, as it stored them; None for a closed-loop run."""
    rate = spec.options.get(RATE)
    return (float(rate), spec.options.get(ARRIVALS_OPTION, "regular")) if rate else None


def rate_figures(spec: RunSpec, samples: Samples | Sequence[TxnSample], window: Window,
                 facts: Mapping[str, int]) -> RateFigures | None:
    """The run against its schedule; None for a closed-loop run, and for one that measured nothing."""
    target = scheduled(spec)
    if target is None or window.end <= window.start:
        return None
    every = samples_of(samples)
    timed = every.where(every.timed)
    intended, started = timed.intended, timed.start
    unstarted = facts.get(UNSTARTED, 0)
    ours = (intended >= window.start) & (intended < window.end)
    completed = timed.completed()
    last = int(math.ceil(max(window.end, float(started.max()) if len(timed) else 0.0)))
    return RateFigures(
        target=target[0], arrivals=target[1], terminals=spec.terminals,
        achieved=int(np.count_nonzero(completed & timed.in_window(window))) / (window.end - window.start),
        scheduled=int(np.count_nonzero(ours)) + unstarted, done=int(np.count_nonzero(ours & completed)),
        backlog_at_start=_backlog(intended, started, window.start),
        backlog_at_end=_backlog(intended, started, window.end) + unstarted,
        warmup_backlog=facts.get(WARMUP_BACKLOG, 0), unstarted=unstarted,
        backlog=_backlog_series(intended, started, facts, window, last),
        late=_late(timed, last), start_error_p99=_start_error_p99(timed, window))


def _backlog(intended: np.ndarray, started: np.ndarray, at: float) -> int:
    """Transactions due before ``at`` and not started by then."""
    return int(np.count_nonzero((intended < at) & (started > at)))


def _backlog_series(intended: np.ndarray, started: np.ndarray, facts: Mapping[str, int], window: Window,
                    last: int) -> tuple[tuple[int, int], ...]:
    """The backlog at the end of each second: the transactions started late, from their samples, and the schedule's
    points never started, from the terminals' count of each second's (``schedule.<kind>_at.<s>``): the warm-up's
    until the window's start skips them, the window's own until the run's end. A run stored before those counts
    has the window's at its end only."""
    skipped, never = _points_at(facts, WARMUP_BACKLOG), _points_at(facts, UNSTARTED)
    if not never and facts.get(UNSTARTED):
        never = {math.ceil(window.end) - 1: facts[UNSTARTED]}
    series = []
    for second in range(1, last + 1):
        due_then = sum(count for at, count in never.items() if at < second)
        if second < window.start:
            due_then += sum(count for at, count in skipped.items() if at < second)
        series.append((second, _backlog(intended, started, float(second)) + due_then))
    return tuple(series)


def _points_at(facts: Mapping[str, int], kind: str) -> dict[int, int]:
    prefix = f"{kind}_at."
    return {int(name.removeprefix(prefix)): value for name, value in facts.items() if name.startswith(prefix)}


def _late(timed: Samples, last: int) -> tuple[tuple[int, int], ...]:
    seconds = timed.start[timed.start - timed.intended > LATE_S].astype(np.int64)
    late = np.bincount(seconds[seconds >= 0], minlength=last)
    return tuple((second, int(late[second])) for second in range(last))


def _start_error_p99(timed: Samples, window: Window) -> float:
    """How late the scheduler woke a terminal that was waiting for an intended start (its previous transaction done
    before it), at the 99th percentile over the window: the schedule's own precision, apart from any backlog."""
    order = np.lexsort((timed.start, timed.terminal))  # each terminal's transactions in the order they started
    terminal, start, end, intended = timed.terminal[order], timed.start[order], timed.end[order], timed.intended[order]
    waited = ((terminal[1:] == terminal[:-1]) & (end[:-1] <= intended[1:])
              & (start[1:] >= window.start) & (start[1:] < window.end))
    errors = (start[1:] - intended[1:])[waited]
    return float(np.percentile(errors, 99)) if len(errors) else math.nan
