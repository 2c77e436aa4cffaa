"""A rate sweep's curve (issue #45): per step and client count, the response time against the throughput achieved,
one point per rate, as TPC-C 5.6's chart of response time against throughput draws it, and its knee.

A point is a rate's runs, their figures averaged over the repeats: the transactions per second achieved
(``RateFigures.achieved``), the headline transaction's latency p90 and p99 measured from each transaction's intended
start, which counts the time it waited behind a database that fell behind, and its service p90, from its actual
start. It is sustained when every repeat kept up with its schedule (``RateFigures.sustained``).

The knee (``knee``) is the highest rate the database served as well as a light load: going up the rates from the
lowest, the last point before the first one that was not sustained, or whose latency p90 is more than ``KNEE_FACTOR``
times the lowest rate's. Why twice: with one queue (M/M/1) the response time, its p90 as its mean, is twice the
unloaded one at 50 % utilisation, the knee of that queue's curve (the utilisation that minimises response time over
utilisation): below it 1 % more load costs less than 1 % more response time, past it more. The lowest rate stands
for the light load, so a sweep should start low.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from maximus.analysis.compare import Estimate, estimate
from maximus.analysis.metrics import TransactionFigures
from maximus.analysis.run import RunReport
from maximus.experiment.plan import PlannedRun
from maximus.records import RunStatus

KNEE_FACTOR = 2.0  # the knee's latency p90 is at most this many times the lowest rate's


@dataclass(frozen=True)
class RateRun:
    """What the curve needs of one complete run of a rate sweep: its place in the plan and its figures."""

    run_id: int
    step: int
    clients: int
    rate: float  # its planned target: transactions per second over all terminals
    achieved: float  # transactions per second completed in its measured window
    sustained: bool  # it kept up with its schedule (``RateFigures.sustained``)
    latency_p90_s: float  # the headline transaction's, from each one's intended start; nan: none completed
    latency_p99_s: float
    service_p90_s: float  # the same from each one's actual start: the database's own time, without the wait


@dataclass(frozen=True)
class RatePoint:
    """One rate of a curve: its runs' figures as means over the repeats with their 95 % intervals."""

    rate: float
    achieved: Estimate
    latency_p90_s: Estimate
    latency_p99_s: Estimate
    service_p90_s: Estimate
    run_ids: tuple[int, ...]  # its complete runs; none: the rate was not measured
    sustained_runs: int  # of them, those that kept up with their schedule

    @property
    def sustained(self) -> bool:
        """Every repeat kept up with its schedule; a rate without a complete run is not."""
        return bool(self.run_ids) and self.sustained_runs == len(self.run_ids)


@dataclass(frozen=True)
class RateCurve:
    step: int
    step_name: str
    clients: int
    points: tuple[RatePoint, ...]  # in increasing rate, every planned rate: one not measured has no runs
    knee: RatePoint | None  # ``knee(points)``

    @property
    def verdict(self) -> str:
        """Where the knee is and why there, in a line, e.g. "knee at 400/s: ...; 800/s: not sustained"."""
        if self.knee is None:
            lowest = self.points[0] if self.points else None
            return f"no knee: {_failure(lowest, None)}" if lowest else "no knee: no rate was planned"
        above = next((point for point in self.points if point.rate > self.knee.rate), None)
        limit = KNEE_FACTOR * self.points[0].latency_p90_s.mean
        found = (f"knee at {self.knee.rate:,g}/s: every rate up to it sustained with latency p90 at most "
                 f"{KNEE_FACTOR:g} × the lowest rate's ({_ms(limit)} at most)")
        if above is None:
            return f"{found}; the sweep's highest rate: sweep higher rates to find where the curve bends"
        return f"{found}; {_failure(above, limit)}"


def knee(points: Sequence[RatePoint]) -> RatePoint | None:
    """The highest rate up to which every rate, from the lowest up, was sustained with a latency p90 at most
    ``KNEE_FACTOR`` times the lowest rate's; None when the lowest rate itself was not sustained or measured."""
    ordered = sorted(points, key=lambda point: point.rate)
    if not ordered:
        return None
    limit = KNEE_FACTOR * ordered[0].latency_p90_s.mean
    found = None
    for point in ordered:
        if _failure(point, limit):
            break
        found = point
    return found


def _failure(point: RatePoint, limit: float | None) -> str:
    """Why ``point`` is past the knee ("" when it is not), ``limit``: the most latency p90 the knee allows."""
    if not point.run_ids:
        return f"{point.rate:,g}/s: not measured (no complete run)"
    if not point.sustained:
        return f"{point.rate:,g}/s: not sustained ({point.sustained_runs} of {len(point.run_ids)} runs kept up)"
    p90 = point.latency_p90_s.mean
    if math.isnan(p90):
        return f"{point.rate:,g}/s: no headline transaction completed"
    if limit is not None and not p90 <= limit:
        return f"{point.rate:,g}/s: latency p90 {_ms(p90)}, more than {_ms(limit)}"
    return ""


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def rate_curves(runs: Sequence[RateRun], step_names: Sequence[str], clients: Sequence[int],
                rates: Sequence[float]) -> tuple[RateCurve, ...]:
    """A curve per step and client count, in that order, of the planned ``rates``; none without rates."""
    if not rates:
        return ()
    return tuple(rate_curve([r for r in runs if r.step == step and r.clients == count], step, name, count, rates)
                 for step, name in enumerate(step_names) for count in clients)


def rate_curve(runs: Sequence[RateRun], step: int, step_name: str, clients: int,
               rates: Sequence[float]) -> RateCurve:
    """One step's curve at one client count, from its ``runs``."""
    points = tuple(_point(rate, [run for run in runs if run.rate == rate]) for rate in sorted(rates))
    return RateCurve(step, step_name, clients, points, knee(points))


def _point(rate: float, runs: Sequence[RateRun]) -> RatePoint:
    return RatePoint(rate, estimate([r.achieved for r in runs]), estimate([r.latency_p90_s for r in runs]),
                     estimate([r.latency_p99_s for r in runs]), estimate([r.service_p90_s for r in runs]),
                     tuple(r.run_id for r in runs), sum(1 for r in runs if r.sustained))


def rate_run(run_id: int, planned: PlannedRun, report: RunReport) -> RateRun | None:
    """The run as its sweep's curve reads it; None for a run outside a sweep, one that did not complete, and one
    that measured nothing."""
    if planned.rate is None or report.rate is None or report.record.status is not RunStatus.COMPLETE:
        return None
    headline = _figures_of(report, report.presentation.headline.transaction)
    latency = headline.latency if headline else None
    service = headline.service if headline else None
    return RateRun(run_id, planned.step, planned.clients, planned.rate, report.rate.achieved, report.rate.sustained,
                   latency.p90 if latency else math.nan, latency.p99 if latency else math.nan,
                   service.p90 if service else math.nan)


def _figures_of(report: RunReport, transaction: str) -> TransactionFigures | None:
    return next((figures for figures in report.figures.transactions if figures.name == transaction), None)
