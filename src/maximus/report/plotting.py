"""Draws the info objects of ``report.charts`` with plotly; decides nothing about what they show.

``figure(info)`` returns a ``plotly.graph_objects.Figure``; ``report.html`` embeds it. Colours say
the same everywhere: green faster, red slower, amber within noise, grey needs repeats.
"""

from __future__ import annotations

from functools import singledispatch

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from maximus.report.charts import DeviceBar, DeviceChart, GainChart, HistogramChart, HistogramPanel, Line, LineChart

VERDICT_COLOURS = {"faster": "#2e7d32", "slower": "#c62828", "within noise": "#f9a825", "needs repeats": "#9e9e9e"}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
MARK_COLOURS = {"average": "#2e7d32", "p90": "#e65100", "max": "#c62828"}
HEIGHT = 380


def _layout(figure: go.Figure, title: str, x_title: str, y_title: str, height: int = HEIGHT) -> go.Figure:
    figure.update_layout(title=title, template="plotly_white", height=height, margin=dict(l=60, r=30, t=60, b=50),
                         legend=dict(orientation="h", y=-0.2), hovermode="closest")
    if x_title or y_title:  # subplots title their own axes
        figure.update_layout(xaxis_title=x_title, yaxis_title=y_title)
    return figure


@singledispatch
def figure(info) -> go.Figure:
    raise TypeError(f"no renderer for {type(info).__name__}")


def _rgba(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _band(line: Line, colour: str) -> list[go.Scatter]:
    """The confidence band as one closed polygon (upper edge out, lower edge back); none without bounds."""
    if line.low is None or line.high is None:
        return []
    known = [(x, lo, hi) for x, lo, hi in zip(line.x, line.low, line.high) if lo is not None and hi is not None]
    if not known:
        return []
    xs = [x for x, _, _ in known] + [x for x, _, _ in reversed(known)]
    ys = [hi for _, _, hi in known] + [lo for _, lo, _ in reversed(known)]
    return [go.Scatter(x=xs, y=ys, mode="lines", fill="toself", fillcolor=_rgba(colour, 0.15), line=dict(width=0),
                       hoverinfo="skip", showlegend=False, name=f"{line.name} 95 % CI", legendgroup=line.name)]


@figure.register
def _line_chart(info: LineChart) -> go.Figure:
    result = go.Figure()
    for index, line in enumerate(info.lines):
        colour = PALETTE[index % len(PALETTE)]
        for band in _band(line, colour):
            result.add_trace(band)
        result.add_trace(go.Scatter(
            x=line.x, y=line.y, name=line.name, mode=_mode(line), text=list(line.text) or None,
            textposition="top center", line=dict(color=colour, dash="dot" if line.axis == "y2" else "solid"),
            stackgroup="shares" if info.stacked else None, yaxis=line.axis, legendgroup=line.name,
            connectgaps=False))
    _add_markers(result, info)
    for span in info.spans:
        result.add_vrect(x0=span.start, x1=span.end, fillcolor="#90caf9", opacity=0.15, line_width=0,
                         annotation_text=span.label, annotation_position="top left")
    if info.x_ticks:
        result.update_layout(xaxis=dict(tickmode="array", tickvals=list(info.x_ticks)))
    if info.y2_title:
        result.update_layout(yaxis2=dict(title=info.y2_title, overlaying="y", side="right", showgrid=False))
    if info.stacked:
        result.update_layout(yaxis_range=[0, 100])
    elif info.floor is not None:
        result.update_layout(yaxis_range=[info.floor, _top(info)])
    return _layout(result, info.title, info.x_title, info.y_title)


def _top(info: LineChart) -> float:
    """The highest value or interval bound drawn, with a margin."""
    values = [v for line in info.lines for v in (*line.y, *(line.high or ())) if v is not None]
    return 1.05 * max(values, default=1.0) or 1.0


def _mode(line: Line) -> str:
    """Markers on short lines, and their labels (such as the client count) when the line has some."""
    if len(line.x) >= 30:
        return "lines"
    return "lines+markers+text" if line.text else "lines+markers"


def _add_markers(result: go.Figure, info: LineChart) -> None:
    """Point events as a rug of triangles along the x axis, in the colour of the line they belong to."""
    colours = {line.name: PALETTE[i % len(PALETTE)] for i, line in enumerate(info.lines)}
    for name, colour in colours.items():
        xs = [m.x for m in info.markers if m.line == name]
        if xs:
            result.add_trace(go.Scatter(x=xs, y=[0] * len(xs), mode="markers", name=f"checkpoint · {name}",
                                        legendgroup=name, showlegend=False,
                                        marker=dict(symbol="triangle-up", size=11, color=colour)))


@figure.register
def _gain_chart(info: GainChart) -> go.Figure:
    steps = [bar.step for bar in info.bars]
    values = [bar.change_percent for bar in info.bars]
    plus = [None if b.high_percent is None or b.change_percent is None else b.high_percent - b.change_percent
            for b in info.bars]
    minus = [None if b.low_percent is None or b.change_percent is None else b.change_percent - b.low_percent
             for b in info.bars]
    result = go.Figure(go.Bar(
        x=steps, y=values, name="vs previous step", width=[0.5] * len(steps),
        marker_color=[VERDICT_COLOURS[b.verdict] for b in info.bars],
        error_y=dict(type="data", array=plus, arrayminus=minus, visible=True),
        text=[b.verdict for b in info.bars], textposition="outside"))
    result.add_trace(go.Scatter(x=steps, y=[b.vs_baseline_percent for b in info.bars], mode="lines+markers",
                                name="cumulative vs baseline", line=dict(color="#37474f", dash="dash")))
    result.add_hline(y=0, line_color="#616161", line_width=1)
    limit = _clip_limit(info)
    _layout(result, info.title, "step", "tpmC change %" + (" (CI clipped)" if limit else ""))
    if limit:
        result.update_yaxes(range=[-min(limit, 100), limit])
    return result


def _clip_limit(info: GainChart) -> float | None:
    """A y range that keeps the bars readable when an interval is far wider than every change (few repeats)."""
    values = [abs(v) for b in info.bars for v in (b.change_percent, b.vs_baseline_percent) if v is not None]
    bounds = [abs(v) for b in info.bars for v in (b.low_percent, b.high_percent) if v is not None]
    limit = 3 * max(values, default=0) + 10
    return limit if bounds and max(bounds) > limit else None


@figure.register
def _histograms(info: HistogramChart) -> go.Figure:
    columns = min(3, max(1, len(info.panels)))
    rows = max(1, -(-len(info.panels) // columns))
    result = make_subplots(rows=rows, cols=columns, subplot_titles=[_panel_title(p) for p in info.panels],
                           horizontal_spacing=0.07, vertical_spacing=0.2)
    shapes = []
    for index, panel in enumerate(info.panels):
        shapes += _add_panel(result, panel, index // columns + 1, index % columns + 1, index + 1)
    _layout(result, info.title, "", "", height=270 * rows + 110)
    # all at once: add_vline per shape is quadratic
    result.update_layout(showlegend=False, shapes=shapes, margin=dict(t=110))
    result.update_annotations(font_size=12)
    return result


def _panel_title(panel: HistogramPanel) -> str:
    marks = " · ".join(f'<span style="color:{MARK_COLOURS[mark]}">{mark} {value:,.1f}</span>'
                       for mark, value in (("average", panel.average_ms), ("p90", panel.p90_ms), ("max", panel.max_ms))
                       if value is not None)
    return f"<b>{panel.transaction}</b> (ms)<br>{marks}"


def _add_panel(result: go.Figure, panel: HistogramPanel, row: int, col: int, axis: int) -> list[dict]:
    """The bins as bars; returns the average, p90 and max as dashed lines (shapes on the panel's axes ``axis``)."""
    centres = [(a + b) / 2 for a, b in zip(panel.edges_ms, panel.edges_ms[1:])]
    widths = [b - a for a, b in zip(panel.edges_ms, panel.edges_ms[1:])]
    result.add_trace(go.Bar(x=centres, y=panel.counts, width=widths, marker_color="#90a4ae", name=panel.transaction,
                            hovertemplate="%{x:.1f} ms: %{y}<extra></extra>"), row=row, col=col)
    top = panel.edges_ms[-1]  # 5.6.1: the axis runs from 0 to 4 x p90; a maximum beyond it is named, not drawn
    beyond = f"{panel.beyond} beyond 4 × p90, up to the max" if panel.beyond else None
    result.update_xaxes(title_text=beyond, range=[0, top * 1.02], row=row, col=col)
    suffix = "" if axis == 1 else str(axis)
    return [dict(type="line", x0=value, x1=value, y0=0, y1=1, xref=f"x{suffix}", yref=f"y{suffix} domain",
                 line=dict(color=MARK_COLOURS[mark], dash="dash", width=2))
            for mark, value in (("average", panel.average_ms), ("p90", panel.p90_ms), ("max", panel.max_ms))
            if value is not None and value <= top]


@figure.register
def _device_chart(info: DeviceChart) -> go.Figure:
    """Grouped bars on a two-level x axis (step, then load level): the database's bar beside fio's, each with its
    interval as a whisker, the ratio above the database's and the verdict in its hover text."""
    x = [[bar.step for bar in info.bars], [bar.level.long_label for bar in info.bars]]
    result = go.Figure()
    result.add_trace(go.Bar(
        x=x, y=[bar.database for bar in info.bars], name="the database", marker_color=PALETTE[0],
        error_y=_whiskers([(b.database, b.database_low, b.database_high) for b in info.bars]),
        text=[_ratio_label(bar) for bar in info.bars], textposition="outside", cliponaxis=False,
        hovertext=[bar.verdict for bar in info.bars]))
    result.add_trace(go.Bar(
        x=x, y=[bar.device for bar in info.bars], name="fio (the device)", marker_color="#90a4ae",
        error_y=_whiskers([(b.device, b.device_low, b.device_high) for b in info.bars])))
    result.update_layout(barmode="group")
    return _layout(result, info.title, "step, clients", info.unit)


def _ratio_label(bar: DeviceBar) -> str:
    """The ratio over the bar (the verdict, which may name several, is in its hover text: a label wider than the bar
    is shrunk unreadable)."""
    return f"{bar.ratio:.2f} of fio" if bar.ratio is not None else ""


def _whiskers(values: list[tuple[float | None, float | None, float | None]]) -> dict:
    plus = [None if mean is None or high is None else high - mean for mean, _, high in values]
    minus = [None if mean is None or low is None else mean - low for mean, low, _ in values]
    return dict(type="data", array=plus, arrayminus=minus, visible=True)
