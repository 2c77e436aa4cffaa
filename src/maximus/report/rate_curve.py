"""A rate sweep's curves (``analysis.rate_curve``) as the terminal and the HTML report show them: per step and client
count a table of rate, throughput achieved, response time and service time with the knee marked, and per step the
chart of response time against throughput (TPC-C 5.6.2). The chart is an info object, drawn by ``report.rate_plot``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from maximus.analysis.compare import Estimate
from maximus.analysis.rate_curve import KNEE_FACTOR, RateCurve, RatePoint
from maximus.experiment.model import Experiment
from maximus.records import Presentation
from maximus.report.format import estimate_text

KNEE = "◀ knee"


@dataclass(frozen=True)
class CurveLine:
    """One client count's points: the throughput achieved (x) against a latency percentile in ms (y), each point
    labelled with its rate and drawn filled when sustained, open when not; a rate not measured is left out."""

    name: str
    x: tuple[float, ...]
    y: tuple[float | None, ...]
    text: tuple[str, ...]
    sustained: tuple[bool, ...]
    colour: int  # the client count's index: its lines share a colour
    dotted: bool = False  # p99 beside the p90


@dataclass(frozen=True)
class KneeMark:
    x: float
    y: float | None
    text: str
    colour: int


@dataclass(frozen=True)
class RateCurveChart:
    title: str
    x_title: str
    y_title: str
    lines: tuple[CurveLine, ...]
    knees: tuple[KneeMark, ...]
    note: str = ""  # why there is nothing to draw


def columns(shown: Presentation) -> tuple[str, ...]:
    """The latency columns are the headline transaction's from the intended start, its service time's from the
    actual start (``sweep_note`` says so)."""
    latency = shown.label(shown.headline.transaction)
    return ("Rate /s", "Achieved /s", f"{latency} p90 ms", f"{latency} p99 ms", "Service p90 ms", "Sustained",
            "Knee")


def rows(curve: RateCurve) -> list[list[str]]:
    """A row per rate, in increasing rate, as ``columns`` names them (plain text: escape it for HTML)."""
    return [[f"{point.rate:,g}", estimate_text(point.achieved, 1), _ms(point.latency_p90_s),
             _ms(point.latency_p99_s), _ms(point.service_p90_s), _sustained(point),
             KNEE if point is curve.knee else ""] for point in curve.points]


def _ms(seconds: Estimate) -> str:
    return estimate_text(seconds, 1, 1000)


def _sustained(point: RatePoint) -> str:
    if not point.run_ids:
        return "not measured"
    runs = len(point.run_ids)
    if point.sustained:
        return "yes" if runs == 1 else f"yes ({runs} of {runs})"
    return "no" if runs == 1 else f"no ({point.sustained_runs} of {runs})"


def sweep_note(experiment: Experiment) -> str:
    """What the curves show and how the knee is found, in a paragraph."""
    return (f"Each step ran at {', '.join(f'{rate:,g}' for rate in experiment.rates)} transactions per second "
            f"({experiment.arrivals} arrivals): latency is measured from each transaction's intended start, so it "
            "counts the wait behind a database that fell behind; service time from its actual start. Each figure is "
            "the mean over the repeats. The knee is the highest rate up to which every rate, from the lowest, was "
            f"sustained with a latency p90 at most {KNEE_FACTOR:g} × the lowest rate's.")


def curve_title(curve: RateCurve) -> str:
    clients = f"{curve.clients} client{'s' if curve.clients != 1 else ''}"
    return f"Step {curve.step}: {curve.step_name} · {clients} · response time against throughput (5.6.2)"


def curve_table(curve: RateCurve, shown: Presentation) -> Table:
    """The curve's table for the terminal, its verdict (where the knee is, and why) under it."""
    table = Table(title=escape(curve_title(curve)), title_justify="left", caption=escape(curve.verdict),
                  caption_justify="left")
    for column in columns(shown):
        table.add_column(column, justify="left" if column in ("Sustained", "Knee") else "right", no_wrap=True,
                         min_width=len(KNEE) if column == "Knee" else None)
    for row in rows(curve):
        table.add_row(*(escape(cell) for cell in row[:-1]), f"[bold green]{row[-1]}[/]" if row[-1] else "")
    return table


def render_rate_curves(console: Console, curves: Sequence[RateCurve], experiment: Experiment,
                       shown: Presentation) -> None:
    """A rate sweep's tables, one per step and client count, after what they show; nothing without curves."""
    if not curves:
        return
    console.print(f"[bold]Response time against throughput[/]\n{escape(sweep_note(experiment))}")
    for curve in curves:
        console.print(curve_table(curve, shown))


def rate_curve_chart(curves: Sequence[RateCurve], shown: Presentation) -> RateCurveChart:
    """One step's curves in a chart: per client count the latency p90 and p99 (dotted) against the throughput
    achieved, the knee a star on its p90 line."""
    label = shown.label(shown.headline.transaction)
    lines: list[CurveLine] = []
    knees = []
    for colour, curve in enumerate(curves):
        measured = [point for point in curve.points if point.run_ids]
        lines += [_line(curve, measured, "p90", colour), _line(curve, measured, "p99", colour)]
        if curve.knee is not None:
            knees.append(KneeMark(curve.knee.achieved.mean, _finite_ms(curve.knee.latency_p90_s),
                                  f"knee {curve.knee.rate:,g}/s", colour))
    first = curves[0] if curves else None
    title = f"{label} response time against throughput (5.6.2), step {first.step}: {first.step_name}" if first else ""
    drawn = tuple(line for line in lines if line.x)
    return RateCurveChart(title, "transactions per second achieved", f"{label} latency from the intended start (ms)",
                          drawn, tuple(knees), "" if drawn else "no rate of this step was measured")


def _line(curve: RateCurve, points: Sequence[RatePoint], percentile: str, colour: int) -> CurveLine:
    latency = [point.latency_p90_s if percentile == "p90" else point.latency_p99_s for point in points]
    return CurveLine(f"{curve.clients} client{'s' if curve.clients != 1 else ''} · {percentile}",
                     tuple(point.achieved.mean for point in points), tuple(_finite_ms(value) for value in latency),
                     tuple(f"{point.rate:,g}/s" for point in points) if percentile == "p90" else (),
                     tuple(point.sustained for point in points), colour, dotted=percentile == "p99")


def _finite_ms(seconds: Estimate) -> float | None:
    return None if math.isnan(seconds.mean) else seconds.mean * 1000
