"""Experiment tables in the classic tuning articles' form: per step, its configuration and its results with
gains."""

from __future__ import annotations


from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from maximus.analysis.compare import Estimate, Ratio, Verdict, estimate
from maximus.analysis.experiment import ExperimentReport
from maximus.analysis.rate_curve import RateCurve
from maximus.analysis.targets import Comparison
from maximus.records import ExperimentRecord
from maximus.report.durability import durability_text
from maximus.report.format import estimate_text, ratio_text, verdict_text
from maximus.report.rate_curve import render_rate_curves
from maximus.report.tables import Notice, level_heading

_VERDICT_STYLE = {Verdict.FASTER: "bold green", Verdict.SLOWER: "bold red", Verdict.WITHIN_NOISE: "yellow",
                  Verdict.NEEDS_REPEATS: "dim"}


def _estimate(value: Estimate, digits: int = 0) -> str:
    return estimate_text(value, digits)


def _ratio(ratio: Ratio | None, interval: bool = True) -> str:
    return ratio_text(ratio, interval, digits=0)


def _gain(ratio: Ratio | None, after_baseline: bool) -> str:
    """The change, its interval and its verdict on lines of their own, so that both gains fit beside the
    figures in 120 columns."""
    if ratio is None:
        return "-" if after_baseline else "baseline"
    return escape(ratio_text(ratio, sep="\n", digits=0)) + "\n" + _verdict(ratio)


def _verdict(ratio: Ratio | None) -> str:
    if ratio is None:
        return "baseline"
    return f"[{_VERDICT_STYLE[ratio.verdict]}]{verdict_text(ratio)}[/]"


def render_experiment(console: Console, report: ExperimentReport, notices: Sequence[Notice] = (),
                      device: Table | None = None, rate_curves: Sequence[RateCurve] = ()) -> None:
    """The steps' tables, a rate sweep's curves (``rate_curves``: ``analysis.bundle.ExperimentData.rate_curves``), the
    cells against the device (``device``: ``report.device.device_table``, when fio measured the runs), then the
    report's warnings (``notices``: durability, noisy cells, failed runs, ...) and the summary line."""
    experiment, summary = report.experiment, report.summary
    console.print(f"[bold]Experiment {report.record.id}: {experiment.name}[/] · {experiment.engine} · "
                  f"{report.presentation.scale} · {experiment.repeats} repeat(s) · "
                  f"{experiment.order.value} · {summary.finished} of {summary.planned} runs finished"
                  f"{_crash_tests(report)}")
    for index, step in enumerate(experiment.steps):
        _render_step(console, report, index)
    render_rate_curves(console, rate_curves, experiment, report.presentation)
    if device is not None:
        console.print(device)
    for notice in notices:
        runs = f" (run{'s' if len(notice.runs) > 1 else ''} {', '.join(map(str, notice.runs))})" \
            if notice.runs else ""
        console.print(f"[yellow]warning ({escape(notice.kind)}):[/] {escape(notice.text)}{runs}")
    console.print(f"[bold]Summary:[/] {summary.headline()}")


def _crash_tests(report: ExperimentReport) -> str:
    count = len(report.crash_tests)
    return f" · {count} crash test{'s' if count != 1 else ''}" if count else ""


def _render_step(console: Console, report: ExperimentReport, index: int) -> None:
    step, summary, shown = report.experiment.steps[index], report.summary, report.presentation
    previous = report.experiment.steps[index - 1] if index else None
    changed = ", ".join(f"{k} {step.replaced[k]} → {v}" for k, v in step.changes.items()) if previous else "baseline"
    knobs = " ".join(f"[bold cyan]{k}={v}[/]" if k in step.changes and previous else f"{k}={v}"
                     for k, v in step.knobs.items())
    table = Table(title=f"Step {index}: {step.name} ({changed})", title_justify="left", caption=knobs,
                  caption_justify="left")
    headline = shown.headline
    for column in (level_heading(summary, "\n"), "Load s", f"{headline.name} ± 95 % CI", headline.committed_name,
                   f"{shown.label(headline.transaction)}\np90 ms"):
        table.add_column(column, justify="right", no_wrap=True)
    # A step's crash tests are of its configuration, not of a load level: its class on the first row only. Its
    # column takes its width from the gains', so that the table still fits in 120 columns.
    durability = [durability_text(summary.step_durability(index))] if summary.crash_tested else []
    for column in ("vs previous (95 % CI)", "vs baseline (95 % CI)"):  # gain, interval, verdict: a line each
        table.add_column(column, justify="left", min_width=12 if durability else 16)
    if durability:
        table.add_column("Durability", justify="left", min_width=12)
    for level in summary.levels:
        cell = summary.level_cell(index, level)
        seconds = cell.p90_headline_s
        p90 = Estimate(seconds.mean * 1000, seconds.low * 1000, seconds.high * 1000, seconds.n)
        failed = f" [red]({cell.failed} failed)[/]" if cell.failed else ""
        table.add_row(f"{escape(level.label)}{failed}", _estimate(cell.load_s, digits=1), _estimate(cell.headline),
                      _estimate(cell.committed), _estimate(p90, digits=1),
                      _gain(cell.vs_previous, previous is not None),
                      _gain(cell.vs_baseline, previous is not None), *durability)
        durability = [""] * len(durability)
    console.print(table)


def render_experiments(console: Console, records: Sequence[ExperimentRecord]) -> None:
    table = Table(title="Experiments", title_justify="left")
    for column in ("Experiment", "Name", "Created (UTC)", "Status", "File"):
        table.add_column(column)
    for record in records:
        table.add_row(str(record.id), record.name, record.created_at.replace("T", " ")[:19], record.status,
                      record.source_path)
    console.print(table)


def render_comparison(console: Console, comparison: Comparison) -> None:
    ratio, figure = comparison.ratio, comparison.figure or comparison.headline.name
    console.print(f"A = {comparison.a_label}: {_estimate_of(comparison.a_values)} {figure} "
                  f"({len(comparison.a_values)} values)")
    console.print(f"B = {comparison.b_label}: {_estimate_of(comparison.b_values)} {figure} "
                  f"({len(comparison.b_values)} values)")
    console.print(f"B/A: {_ratio(ratio)} → {_verdict(ratio)}  [dim](95 % interval; {comparison.method})[/]")
    if not comparison.higher_is_better:
        console.print("[dim]Both kept a fixed rate, so their throughput is the rate asked for: compared by latency "
                      "from the intended start, lower is faster.[/]")
    if comparison.differences:
        console.print("The runs differ in: " + escape("; ".join(f"{what} {a} → {b}"
                                                                for what, a, b in comparison.differences)))


def _estimate_of(values: Sequence[float]) -> str:
    return _estimate(estimate(values))
