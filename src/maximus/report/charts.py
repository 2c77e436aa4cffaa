"""What each chart of the HTML report shows, as plain data: pure "info" functions, no drawing.

Every chart is a function from analysis results (``analysis.*``) to a frozen info object; the
renderer (``report.plotting``) turns an info object into a plotly figure and nothing else. Tests
check the info objects, so what a chart says is tested without looking at pixels.

Conventions: times in seconds from the run's time origin; latencies in milliseconds; a value
that was not measured is ``None`` (drawn as a gap, never as zero); an info object with no lines or
panels carries a ``note`` saying why, and the report prints the note instead of an empty chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from maximus.analysis.compare import Estimate
from maximus.analysis.device import DeviceCell
from maximus.analysis.experiment import ExperimentSummary
from maximus.analysis.metrics import RunFigures, TransactionFigures
from maximus.analysis.rate import LATE_S, RateFigures
from maximus.analysis.timeseries import CpuTimeline, DiskTimeline
from maximus.experiment.plan import Level
from maximus.records import Headline, Presentation, Window

def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) or math.isinf(value) else float(value)


@dataclass(frozen=True)
class Line:
    """One trace. ``low``/``high`` (same length as ``y``) bound a confidence band when given.
    ``axis`` is "y" or "y2" (the chart's second, right-hand axis)."""

    name: str
    x: tuple[float, ...]
    y: tuple[float | None, ...]
    low: tuple[float | None, ...] | None = None
    high: tuple[float | None, ...] | None = None
    text: tuple[str, ...] = ()
    axis: str = "y"


@dataclass(frozen=True)
class Marker:
    """A point event on the x axis, such as a checkpoint, of the line named ``line`` (drawn in its colour)."""

    x: float
    line: str


@dataclass(frozen=True)
class Span:
    """A shaded x interval, such as the measured window."""

    start: float
    end: float
    label: str


@dataclass(frozen=True)
class LineChart:
    title: str
    x_title: str
    y_title: str
    lines: tuple[Line, ...]
    markers: tuple[Marker, ...] = ()
    spans: tuple[Span, ...] = ()
    stacked: bool = False  # lines are shares of one whole, drawn as stacked areas
    y2_title: str = ""
    note: str = ""
    floor: float | None = None  # the y axis starts here (throughput cannot be negative, its interval can)
    x_ticks: tuple[float, ...] = ()  # label exactly these x values (client counts), when given


@dataclass(frozen=True)
class GainBar:
    """One step's tpmC against the previous step (percent, with its 95 % interval) and the baseline."""

    step: str
    change_percent: float | None
    low_percent: float | None
    high_percent: float | None
    verdict: str
    vs_baseline_percent: float | None


@dataclass(frozen=True)
class GainChart:
    title: str
    level: Level
    bars: tuple[GainBar, ...]
    note: str = ""


@dataclass(frozen=True)
class HistogramPanel:
    """One transaction's response times (5.6.1): equal bins from 0 to 4 x p90, with the marks the spec asks
    for. ``beyond`` counts the responses past the last edge, which ``max_ms`` then lies beyond."""

    transaction: str
    edges_ms: tuple[float, ...]
    counts: tuple[int, ...]
    beyond: int
    average_ms: float | None
    p90_ms: float | None
    max_ms: float | None


@dataclass(frozen=True)
class HistogramChart:
    title: str
    panels: tuple[HistogramPanel, ...]
    note: str = ""


# --- experiment charts ----------------------------------------------------------------------------


def _percent(ratio: float) -> float | None:
    """A ratio B/A as a change in percent (1.25 -> +25); None when it is unknown (NaN)."""
    return _finite(100 * (ratio - 1))


def gain_chart(summary: ExperimentSummary, level: Level | None = None) -> GainChart:
    """Each step's headline gain (TPC-C: tpmC) over the previous step at ``level`` (default: the highest, as the
    summary line's)."""
    shown = level if level is not None else summary.highest_level
    bars = []
    for step in range(1, len(summary.step_names)):
        cell = summary.level_cell(step, shown)
        ratio = cell.step_gain
        bars.append(GainBar(summary.step_names[step], _percent(ratio.ratio), _percent(ratio.low),
                            _percent(ratio.high), ratio.verdict.value, _percent(cell.baseline_gain.ratio)))
    note = "" if bars else "only a baseline: no step to gain from"
    at = f" @ {shown.rate:,g}/s" if shown.rate is not None else ""
    return GainChart(f"{summary.figure.name} gain per step at {shown.clients} clients{at} (95 % CI)", shown,
                     tuple(bars), note)


def _bounds(estimates: Sequence[Estimate], scale: float = 1.0
            ) -> tuple[tuple[float | None, ...], tuple[float | None, ...], tuple[float | None, ...]]:
    means = tuple(_finite(e.mean * scale) for e in estimates)
    lows = tuple(_finite(e.low * scale) for e in estimates)
    highs = tuple(_finite(e.high * scale) for e in estimates)
    return means, lows, highs


def _level_lines(summary: ExperimentSummary) -> list[tuple[str, int, tuple[Level, ...]]]:
    """(name, step, levels) of each line a chart of the cells draws: a step's across its client counts; in a rate
    sweep a step's at one client count across its rates, lowest first, since a line across client counts would join
    cells at different rates."""
    if not summary.swept:
        return [(name, step, summary.levels) for step, name in enumerate(summary.step_names)]
    counts = list(dict.fromkeys(level.clients for level in summary.levels))
    return [(f"{name} · {clients_label(count)}", step,
             tuple(sorted((level for level in summary.levels if level.clients == count), key=_rate_of)))
            for step, name in enumerate(summary.step_names) for count in counts]


def _rate_of(level: Level) -> float:
    return level.rate if level.rate is not None else math.nan


def throughput_against_load(summary: ExperimentSummary) -> LineChart:
    """Mean headline figure per client count, one line per configuration, with its 95 % confidence band; in a rate
    sweep per rate asked, one line per configuration and client count."""
    lines = []
    for name, step, levels in _level_lines(summary):
        means, lows, highs = _bounds([summary.level_cell(step, level).headline for level in levels])
        lines.append(Line(name, tuple(_load_x(level) for level in levels), means, lows, highs))
    ticks = tuple(sorted({_load_x(level) for level in summary.levels}))
    if summary.swept:
        return LineChart("Throughput against the rate asked (mean over repeats, 95 % CI band)",
                         "rate asked (transactions per second)", summary.figure.name, tuple(lines), floor=0.0,
                         x_ticks=ticks)
    return LineChart("Throughput against clients (mean over repeats, 95 % CI band)", "clients (terminals)",
                     summary.figure.name, tuple(lines), floor=0.0, x_ticks=ticks)


def _load_x(level: Level) -> float:
    """Where a level sits on a chart's x axis: its rate in a sweep, else its client count."""
    return level.rate if level.rate is not None else float(level.clients)


def p90_against_throughput(summary: ExperimentSummary, presentation: Presentation) -> LineChart:
    """The headline transaction's p90 response time against the headline figure (TPC-C 5.6.2: New-Order's
    against tpmC), one point per client count, one line per configuration; in a rate sweep one point per rate
    (labelled with it), one line per configuration and client count."""
    lines = []
    for line_name, step, levels in _level_lines(summary):
        cells = [summary.level_cell(step, level) for level in levels]
        throughput = tuple(_finite(c.headline.mean) for c in cells)
        p90 = tuple(_finite(c.p90_headline_s.mean * 1000) for c in cells)
        known = [(x, y, _point_text(c.level)) for x, y, c in zip(throughput, p90, cells) if x is not None]
        lines.append(Line(line_name, tuple(x for x, _, _ in known), tuple(y for _, y, _ in known),
                          text=tuple(t for _, _, t in known)))
    name = presentation.label(summary.figure.transaction)
    return LineChart(f"{name} p90 response time against throughput (5.6.2)", summary.figure.name,
                     f"{name} p90 (ms)", tuple(lines))


@dataclass(frozen=True)
class DeviceBar:
    """One cell against its device: the database's mean rate over the repeats and fio's, each with its 95 %
    interval (None: a single repeat), and the ratio and verdict shown beside them."""

    step: str
    level: Level
    database: float | None
    database_low: float | None
    database_high: float | None
    device: float | None
    device_low: float | None
    device_high: float | None
    ratio: float | None
    verdict: str


@dataclass(frozen=True)
class DeviceChart:
    title: str
    unit: str
    bars: tuple[DeviceBar, ...]
    note: str = ""


def device_chart(cells: Sequence[DeviceCell], step_names: Sequence[str]) -> DeviceChart:
    """Per step (a storage layout, a scheduler), the database's rate beside fio's at each load level. The cells in
    another unit than the first are left out (one axis, one unit) and the note says so."""
    if not cells:
        return DeviceChart("Against the device", "", (), "no run of this experiment was held against fio")
    unit = cells[0].unit
    shown = [cell for cell in cells if cell.unit == unit]
    bars = []
    for cell in shown:
        database, database_low, database_high = _bounds([cell.database])
        device, device_low, device_high = _bounds([cell.device])
        bars.append(DeviceBar(step_names[cell.step], cell.level, database[0], database_low[0], database_high[0],
                              device[0], device_low[0], device_high[0], _finite(cell.ratio.mean), cell.verdict))
    left_out = len(cells) - len(shown)
    note = f"{left_out} cell(s) in another unit than {unit} are in the table only" if left_out else ""
    levels = "client count and rate" if any(cell.level.rate is not None for cell in cells) else "client count"
    return DeviceChart(f"The database against fio's matching job, per step and {levels} ({unit}, mean over "
                       "repeats, 95 % CI)", unit, tuple(bars), note)


# --- run charts -------------------------------------------------------------------------------------


def clients_label(count: int) -> str:
    return f"{count} client{'s' if count != 1 else ''}"


def _point_text(level: Level) -> str:
    """A cell's point on a chart: its client count, or in a rate sweep (whose line names its clients) its rate."""
    return f"{level.rate:,g}/s" if level.rate is not None else clients_label(level.clients)


def histogram_panel(transaction: TransactionFigures, label: str) -> HistogramPanel:
    """5.6.1 for one transaction; the bins are ``analysis.stats.histogram``'s, in milliseconds."""
    latency = transaction.latency
    return HistogramPanel(label, tuple(e * 1000 for e in transaction.histogram.edges),
                          transaction.histogram.counts, transaction.histogram.beyond,
                          _finite(latency.average * 1000), _finite(latency.p90 * 1000), _finite(latency.maximum * 1000))


def response_histograms(figures: RunFigures, title: str, presentation: Presentation) -> HistogramChart:
    """One panel per transaction type that completed in the measured window, deferred ones included."""
    panels = tuple(histogram_panel(t, presentation.label(t.name)) for t in figures.transactions if t.completed)
    return HistogramChart(title, panels, "" if panels else "no transaction completed in the measured window")


def throughput_over_time(runs: Sequence[tuple[str, RunFigures, tuple[float, ...] | None]], title: str,
                         headline: Headline) -> LineChart:
    """Headline transactions per minute or per second (TPC-C: New-Orders per minute) in each second of each run
    (5.6.3), warm-up included, measured window shaded.

    ``runs`` holds (label, figures, checkpoint times or None when the engine reports none).
    """
    lines, markers = [], []
    for label, figures, checkpoints in runs:
        seconds = tuple(float(s) for s, _, _ in figures.per_second)
        lines.append(Line(label, seconds, tuple(headline.rate(n, 1.0) for _, n, _ in figures.per_second)))
        markers += [Marker(t, label) for t in checkpoints or ()]
    spans = _window_spans([f.window for _, f, _ in runs])
    reported = any(c is not None for _, _, c in runs)
    note = ("▲ on the time axis: a checkpoint observed in the sampling interval ending there, in its run's colour"
            if reported else "checkpoints: not reported by this engine's samplers in this configuration")
    period = "minute" if headline.period == "min" else "second"
    return LineChart(title, "elapsed seconds", f"{headline.per_second_name} per {period}", tuple(lines), tuple(markers),
                     spans,
                     note=note if lines else "no transaction completed")


def _window_spans(windows: Sequence[Window]) -> tuple[Span, ...]:
    distinct = sorted({(w.start, w.end) for w in windows})
    return tuple(Span(start, end, "measured window") for start, end in distinct)


def schedule_over_time(rate: RateFigures, window: Window, title: str) -> LineChart:
    """A fixed-rate run against its schedule, each second from the time origin: the backlog (transactions due and not
    started) at the second's end, and the starts in the second later than intended, measured window shaded. A backlog
    that climbs is a rate the run could not keep; late starts with none are the scheduler's own jitter."""
    lines = (Line("backlog at the second's end", tuple(float(s) for s, _ in rate.backlog),
                  tuple(float(n) for _, n in rate.backlog)),
             Line(f"starts over {LATE_S * 1000:g} ms late", tuple(float(s) for s, _ in rate.late),
                  tuple(float(n) for _, n in rate.late)))
    return LineChart(title, "elapsed seconds", "transactions", lines, spans=_window_spans([window]), floor=0.0)


def cpu_over_time(timeline: CpuTimeline | None, window: Window, title: str) -> LineChart:
    """CPU user / system / iowait / idle / steal shares per sampling interval, stacked to 100 %."""
    if timeline is None:
        return LineChart(title, "elapsed seconds", "% of all CPUs", (), note="CPU: not measured in this run")
    lines = tuple(Line(mode, timeline.times, tuple(_finite(v) for v in values))
                  for mode, values in timeline.shares.items())
    return LineChart(title, "elapsed seconds", "% of all CPUs", lines, spans=_window_spans([window]), stacked=True)


def io_over_time(timeline: DiskTimeline | None, window: Window, title: str) -> LineChart:
    """The data device's reads and writes per second (left axis) and MB per second (right axis)."""
    if timeline is None:
        return LineChart(title, "elapsed seconds", "I/O per second", (), note="I/O: not measured in this run")
    series = (("reads/s", timeline.reads_per_s, "y"), ("writes/s", timeline.writes_per_s, "y"),
              ("read MB/s", timeline.read_mb_per_s, "y2"), ("written MB/s", timeline.written_mb_per_s, "y2"))
    lines = tuple(Line(name, tuple(t for t, _ in points), tuple(_finite(v) for _, v in points), axis=axis)
                  for name, points, axis in series)
    return LineChart(f"{title} (device {timeline.device})", "elapsed seconds", "operations per second", lines,
                     spans=_window_spans([window]), y2_title="MB per second")
