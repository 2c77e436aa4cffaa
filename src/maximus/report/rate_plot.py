"""Draws a rate sweep's chart (``report.rate_curve.RateCurveChart``) with plotly, as ``report.plotting.figure`` draws
the other charts: importing this module registers it there."""

from __future__ import annotations

import plotly.graph_objects as go

from maximus.report.plotting import HEIGHT, PALETTE, figure
from maximus.report.rate_curve import CurveLine, KneeMark, RateCurveChart


@figure.register
def rate_curve_figure(info: RateCurveChart) -> go.Figure:
    """Each client count's p90 (solid, its points labelled with their rate) and p99 (dotted) in one colour; a point
    filled when its rate was sustained, open when not; the knee a star."""
    result = go.Figure([*(_line(line) for line in info.lines), *(_knee(knee) for knee in info.knees)])
    result.update_layout(title=info.title, template="plotly_white", height=HEIGHT, hovermode="closest",
                         margin=dict(l=60, r=30, t=60, b=50), legend=dict(orientation="h", y=-0.2),
                         xaxis_title=info.x_title, yaxis_title=info.y_title, yaxis_rangemode="tozero",
                         xaxis_rangemode="tozero")
    return result


def _colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _line(line: CurveLine) -> go.Scatter:
    colour = _colour(line.colour)
    return go.Scatter(x=line.x, y=line.y, name=line.name, mode="lines+markers+text" if line.text else "lines+markers",
                      text=list(line.text) or None, textposition="top left", connectgaps=False,
                      line=dict(color=colour, dash="dot" if line.dotted else "solid"),
                      marker=dict(size=9, color=colour,
                                  symbol=["circle" if sustained else "circle-open" for sustained in line.sustained]))


def _knee(knee: KneeMark) -> go.Scatter:
    return go.Scatter(x=[knee.x], y=[knee.y], name=knee.text, mode="markers+text", text=[knee.text],
                      textposition="bottom right",
                      marker=dict(symbol="star", size=18, color=_colour(knee.colour), line=dict(color="#212121",
                                                                                               width=1)))
