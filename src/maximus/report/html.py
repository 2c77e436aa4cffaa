"""The self-contained HTML report: one file, every script and style inlined, no network needed to view it.

``experiment_page(data)`` and ``run_page(run)`` return the whole document as text. They render the
data of ``report.tables`` and ``report.charts`` (drawn by ``report.plotting``); they compute nothing.
plotly.js is inlined once, in the head; each chart is a ``<div class="chart" data-chart=KIND>``
followed by the script that draws it. When every chart is drawn the page sets
``<body data-charts="rendered">`` (``templates/boot.js``), which tests wait for.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from html import escape
from importlib import resources
from importlib.metadata import PackageNotFoundError, version
from string import Template
from typing import Iterable, Mapping, Sequence

from maximus.analysis.compare import Estimate, Ratio
from maximus.analysis.device import DeviceComparison
from maximus.analysis.durability import Durability
from maximus.analysis.monitoring import CpuFigures
from maximus.analysis.rate_curve import RateCurve
from maximus.analysis.timeseries import checkpoint_times, cpu_timeline, disk_timeline
from maximus.report import charts, rate_curve, tables
from maximus.report import rate_plot  # noqa: F401  (draws the rate curves' charts: registers with plotting.figure)
from maximus.analysis.bundle import ExperimentData, RunData, representative
from maximus.client_hosts import ClientHostRecord, client_hosts
from maximus.report.device import device_columns, device_rows
from maximus.report.format import (band_value_text, device_job_text, estimate_text, fraction_text, rate_digits,
                                   ratio_text, verdict_text)
from maximus.report.hosts import host_columns, host_rows
from maximus.report.plotting import figure
from maximus.report.schedule import SCHEDULE_TITLE, schedule_rows
from maximus.records import BandResult, CheckResult, Presentation

NOT_MEASURED = '<span class="not-measured">not measured</span>'
NOT_TESTED = '<span class="not-measured">not tested</span>'


# --- the page -------------------------------------------------------------------------------------------


def experiment_page(data: ExperimentData) -> str:
    """The whole report of an experiment (see docs/report.md for its sections)."""
    experiment = data.report.experiment
    title = f"Maximus report · experiment {data.report.record.id}: {experiment.name}"
    shown = data.report.presentation
    body = [_header(title, shown, ("Experiment", tables.experiment_facts(data)),
                    tables.machine_facts(data.runs), tables.experiment_notices(data)),
            _summary(data), _sweep_charts(data), _rate_curves(data), _experiment_device(data),
            *(_step(data, index) for index in range(len(experiment.steps))),
            _conformance(tables.conformance(data.runs), shown), _footer()]
    return _document(title, body)


def run_page(run: RunData) -> str:
    """The report of one run: its figures, run table, charts and conformance."""
    record = run.report.record
    title = f"Maximus report · run {record.id}"
    shown = run.report.presentation
    column = f"{record.spec.terminals} terminal{'s' if record.spec.terminals != 1 else ''}"
    results = [_knobs(tuple((k, v, False) for k, v in record.spec.knobs.items())),
               _reported_settings(record.engine_settings), _run_figures(run), _response_times(run),
               _run_schedule(run), _run_device(run.report.device),
               _client_hosts(client_hosts(record.environment), run.report.monitoring.figures.hosts_cpu),
               _run_table(tables.run_table("Run table (measured window)", [(column, run)], shown),
                          tables.unmeasured_note([run])),
               *_run_charts(run, [run], "run")]
    body = [_header(title, shown, ("Run", tables.run_facts(run)), tables.machine_facts([run]),
                    tables.run_notices([run])),
            _section("Results", results), _conformance(tables.conformance([run]), shown), _footer()]
    return _document(title, body)


def _run_figures(run: RunData) -> str:
    figures, headline = run.report.figures, run.report.presentation.headline
    rows = [[headline.name, f"{figures.headline:,}", headline.meaning],
            [headline.committed_name, _number(figures.committed, 0), headline.committed_meaning],
            ["TPM", _number(figures.tpm, 0), "all business transactions per minute"],
            *([escape(name.replace("_", " ")), f"{count:,}", "in the measured window"]
              for name, count in figures.outcomes.items())]
    return _table(["Figure", "Value", "Meaning"], ([r[0], r[1], escape(r[2])] for r in rows), "run-figures")


def _response_times(run: RunData) -> str:
    """A fixed-rate run's latency from each transaction's intended start beside its service time from the actual
    start; "" for a closed-loop run, whose run table has its latencies."""
    rows = tables.response_times(run)
    if not rows:
        return ""
    stats = [heading for heading, _ in tables.RESPONSE_STATS]
    body = ([escape(r.transaction), f"{r.completed:,}", *(_number(v) for v in r.latency),
             *(_number(v) if v is not None else "-" for v in r.service)] for r in rows)
    groups = (("", 2), ("latency (from intended start)", len(stats)), ("service time (from actual start)", len(stats)))
    return ("<h3>Response times (ms)</h3>"
            + _table(["Transaction", "Count", *stats, *stats], body, "response-times", groups=groups))


def _run_schedule(run: RunData) -> str:
    """A fixed-rate run against its schedule: the figures, the verdict, the backlog and late starts over time; ""
    for a closed-loop run."""
    rate = run.report.rate
    if rate is None:
        return ""
    rows = ([escape(figure), escape(value), escape(meaning)] for figure, value, meaning in schedule_rows(rate))
    verdict = (f'<p class="rate-verdict">Verdict: <span class="{"pass" if rate.sustained else "fail"}">'
               f"{escape(rate.verdict)}</span></p>")
    chart = charts.schedule_over_time(rate, run.report.record.window, f"Backlog and late starts, {run.label}")
    return (f"<h3>{escape(SCHEDULE_TITLE)}</h3>" + _table(["", "Value", "Meaning"], rows, "schedule") + verdict
            + _chart("chart-schedule-run", "schedule", chart))


def _client_hosts(hosts: Sequence[ClientHostRecord], machines: Mapping[str, CpuFigures]) -> str:
    """A run driven from several client hosts: a row per host (``report.hosts``); "" for a run from one machine."""
    if not hosts:
        return ""
    rows = ([escape(text) for text in row] for row in host_rows(hosts, machines))
    return "<h3>Client hosts</h3>" + _table(host_columns(hosts, machines), rows, "client-hosts", text_columns=2)


def _run_device(device: DeviceComparison | None) -> str:
    """A storage-bound run against fio's matching job, measured before it on the same file system; "" for another
    run."""
    if device is None:
        return ""
    limit, digits = device.limit, rate_digits(device.unit)
    rows = [["fio's job", escape(device_job_text(limit.job)), escape(f"in {limit.directory}, before the run")],
            ["fio", f"{device.device:,.{digits}f} {escape(device.unit)}",
             f"latency p50 {limit.latency_p50_us:,.0f} µs, p99 {limit.latency_p99_us:,.0f} µs"],
            ["The run", f"{escape(estimate_text(device.database, digits))} {escape(device.unit)}",
             "mean of the run's batch means ± their 95 % interval"],
            ["Ratio", escape(fraction_text(device.ratio)), "the run's rate over fio's (95 % interval)"],
            ["Verdict", f'<span class="device-verdict">{escape(device.verdict)}</span>', escape(device.reason)]]
    return "<h3>Against the device</h3>" + _table(["", "Value", "Meaning"], rows, "device")


def _document(title: str, body: Iterable[str]) -> str:
    template = Template(_resource("report.html"))
    return template.substitute(title=escape(title), version=escape(_version()), style=_resource("report.css"),
                               plotly=_plotly_js(), boot=_resource("boot.js"), body="\n".join(body))


def _resource(name: str) -> str:
    return (resources.files("maximus.report") / "templates" / name).read_text(encoding="utf-8")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _version() -> str:
    try:
        return version("maximus")
    except PackageNotFoundError:
        return "unknown"


def _footer() -> str:
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", " UTC")
    return (f"<footer>Generated by Maximus {escape(_version())} on {stamp}. Every figure is recomputed from the "
            "raw samples of the results database; <code>maximus export</code> gives them as JSON or CSV.</footer>")


# --- small pieces -----------------------------------------------------------------------------------------


def _section(title: str, parts: Iterable[str], anchor: str = "") -> str:
    name = f' id="{escape(anchor)}"' if anchor else ""
    return f"<section{name}><h2>{escape(title)}</h2>\n" + "\n".join(parts) + "</section>"


def _number(value: float | None, digits: int = 1) -> str:
    return NOT_MEASURED if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def _estimate(value: Estimate, digits: int = 0, scale: float = 1.0) -> str:
    return estimate_text(value, digits, scale)


def _ratio(ratio: Ratio | None, interval: bool = True, sep: str = " ") -> str:
    """A change in percent with its 95 % interval after ``sep`` (HTML, e.g. "<br>")."""
    return ratio_text(ratio, interval, sep)


def _verdict(ratio: Ratio | None) -> str:
    if ratio is None:
        return '<span class="verdict-baseline">baseline</span>'
    return f'<span class="verdict-{ratio.verdict.value.replace(" ", "-")}">{escape(verdict_text(ratio))}</span>'


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], css: str = "", text_columns: int = 1,
           groups: Sequence[tuple[str, int]] = ()) -> str:
    """An HTML table; cells are HTML already (escape text before). The first ``text_columns`` align left.
    ``groups``: (heading, columns it spans) of a header row above ``header``'s, none without them."""
    def cell(tag: str, index: int, content: str) -> str:
        css = ' class="text"' if index < text_columns else ""
        return f"<{tag}{css}>{content}</{tag}>"
    names = "".join(cell("th", i, escape(h)) for i, h in enumerate(header))
    spans = "".join(f'<th class="group" colspan="{n}">{escape(text)}</th>' for text, n in groups)
    head = (f"<tr>{spans}</tr>" if groups else "") + f"<tr>{names}</tr>"
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>\n" for row in rows)
    return f'<div class="scroll"><table class="{css}"><thead>{head}</thead><tbody>{body}</tbody></table></div>'


def _facts(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><th>{escape(label)}</th><td>{escape(value)}</td></tr>" for label, value in rows)
    return f'<table class="facts"><tbody>{body}</tbody></table>'


def _label(shown: Presentation) -> str:
    css = "label-conforming" if shown.conforming else "label-like"
    return f'<span class="{css}" data-benchmark>{escape(shown.benchmark)}</span>'


def _chart(chart_id: str, kind: str, info) -> str:
    """The chart's div and drawing script; only the info's note when it has nothing to draw."""
    note = f'<p class="note not-measured" data-note="{escape(kind)}">{escape(info.note)}</p>' if info.note else ""
    if not (getattr(info, "lines", None) or getattr(info, "bars", None) or getattr(info, "panels", None)):
        return note
    payload = figure(info).to_json()  # plotly escapes "</" inside strings, so it cannot end the script early
    return (f'<div id="{chart_id}" class="chart" data-chart="{escape(kind)}"></div>\n'
            f'<script>maximusPlot("{chart_id}", {payload});</script>\n{note}')


# --- header and summary ----------------------------------------------------------------------------------


def _header(title: str, shown: Presentation, facts: tuple[str, Sequence[tuple[str, str]]],
            machine: Sequence[tuple[str, str]], notices: Sequence[tables.Notice]) -> str:
    """Title, benchmark label, (heading, facts), the machine's fingerprint and the warnings."""
    warnings = "".join(f'<li class="kind-{escape(n.kind)}"><span class="kind">{escape(n.kind)}</span>'
                       f"{escape(n.text)}{_runs(n.runs)}</li>" for n in notices)
    return (f"<header><h1>{escape(title)}</h1><p class=\"subtitle\">{_label(shown)}</p>"
            f'<div class="top"><div><h3>{escape(facts[0])}</h3>{_facts(facts[1])}</div>'
            f"<div><h3>Machine</h3>{_facts(machine) if machine else '<p class=note>no fingerprint stored</p>'}</div>"
            f'</div><h3>Warnings</h3><ul class="warnings" id="warnings">'
            f"{warnings or '<li class=kind-none>none</li>'}</ul></header>")


def _runs(ids: Sequence[int]) -> str:
    if not ids:
        return ""
    shown = ", ".join(map(str, ids[:12])) + (" …" if len(ids) > 12 else "")
    return f' <span class="note">(run{"s" if len(ids) > 1 else ""} {shown})</span>'


def _summary(data: ExperimentData) -> str:
    s = tables.summary(data)
    figures = _table(["", escape(s.baseline), escape(s.final), "Change (95 % CI)"], [
        [f"{escape(s.figure)} at {escape(s.level.long_label)}", _estimate(s.headline_baseline),
         _estimate(s.headline_final), _ratio(s.headline_gain)],
        ["Load time s", _estimate(s.load_baseline, 1), _estimate(s.load_final, 1), _ratio(s.load_gain)]],
        "summary-figures")
    verdicts = _table(["Step", *(level.long_label for level, _ in (s.verdicts[0][1] if s.verdicts else ())),
                       "Significant",
                       *(["Durability"] if s.durability else [])], _significance_rows(s), "significance")
    heading = "Which steps were significant (change over the previous step)" + \
        (", and how durable each was under its crash tests" if s.durability else "")
    return _section("Summary", [f'<p class="headline">{escape(s.headline)}</p>', figures,
                                _chart("chart-gain", "gain", charts.gain_chart(data.report.summary)),
                                f"<h3>{escape(heading)}</h3>", verdicts],
                    "summary")


def _significance_rows(s: tables.Summary) -> list[list[str]]:
    """A row per step after the baseline: its change at each load level and whether any was significant; with
    crash tests, the baseline's row first and each step's durability beside its change."""
    rows = [[escape(name), *(f"{_ratio(r, sep='<br>')}<br>{_verdict(r)}" for _, r in ratios), "yes" if sig else "no"]
            for name, ratios, sig in s.verdicts]
    if not s.durability:
        return rows
    levels = len(s.verdicts[0][1]) if s.verdicts else 0
    baseline = [escape(s.baseline), *([_verdict(None)] * levels), "-"]
    return [row + [_durability(found)] for row, found in zip([baseline, *rows], s.durability)]


def _durability(found: Durability | None) -> str:
    if found is None:
        return NOT_TESTED
    return f'<span class="durability-{found.worst.value}">{escape(found.durability_class)}</span>'


def _sweep_charts(data: ExperimentData) -> str:
    """Throughput against the load (client counts; a rate sweep's rates) and p90 against throughput."""
    summary = data.report.summary
    across, load = ("the rate sweep", "rate") if summary.swept else ("the client sweep", "clients")
    return _section(f"Throughput and response time across {across}", [
        _chart(f"chart-throughput-{load}", f"throughput-{load}", charts.throughput_against_load(summary)),
        _chart("chart-p90-throughput", "p90-throughput",
               charts.p90_against_throughput(summary, data.report.presentation))],
        "sweep")


def _rate_curves(data: ExperimentData) -> str:
    """A rate sweep's response time against throughput: per step its chart, then per client count its table and
    where its knee is; "" for an experiment without rates."""
    if not data.rate_curves:
        return ""
    shown = data.report.presentation
    parts = [f'<p class="note">{escape(rate_curve.sweep_note(data.report.experiment))} In the charts a rate drawn '
             "filled was sustained, one drawn open was not, and the star is the knee.</p>"]
    for index, name in enumerate(data.report.summary.step_names):
        curves = [curve for curve in data.rate_curves if curve.step == index]
        parts += [f"<h3>Step {index}: {escape(name)}</h3>",
                  _chart(f"chart-rate-curve-s{index}", "rate-curve", rate_curve.rate_curve_chart(curves, shown)),
                  *(_rate_curve_table(curve, shown) for curve in curves)]
    return _section("Response time against throughput", parts, "rate-curve")


def _rate_curve_table(curve: RateCurve, shown: Presentation) -> str:
    rows = ([escape(cell) for cell in row] for row in rate_curve.rows(curve))
    return (f"<h4>{escape(charts.clients_label(curve.clients))}</h4>"
            + _table(list(rate_curve.columns(shown)), rows, "rate-curve")
            + f'<p class="knee" data-knee="{escape(f"{curve.knee.rate:g}" if curve.knee else "")}">'
              f"{escape(curve.verdict)}</p>")


def _experiment_device(data: ExperimentData) -> str:
    """Each cell against its device: the chart per step (a layout, a scheduler) and the table; "" when fio measured
    no run of the experiment."""
    if not data.device:
        return ""
    rows = ([escape(text) for text in row] for row in device_rows(data))
    chart = charts.device_chart(list(data.device.values()), data.report.summary.step_names)
    return _section("Against the device", [
        "<p class=note>fio ran the job that matches each run on its data's file system before it: both rates are "
        "means over the repeats, the ratio the mean of each run's own (docs/workloads.md).</p>",
        _chart("chart-device", "device", chart), _table(list(device_columns(data)), rows, "device-cells", 1)],
        "device")


# --- steps --------------------------------------------------------------------------------------------------


def _step(data: ExperimentData, index: int) -> str:
    table = tables.step_table(data, index)
    changed = ", ".join(f"{k} {before} → {after}" for k, before, after in table.changes) or "baseline"
    columns = tables.sweep_columns(data, index)
    summary = data.report.summary
    largest = representative(data.cell_runs(index, summary.highest_level))
    shown = data.report.presentation
    each = "load level" if summary.swept else "client count"
    title = f"Run table (measured window, the median-{shown.headline.name} repeat of each {each})"
    parts = [_knobs(table.knobs), _step_durability(table.durability),
             _step_results(table, shown, tables.level_heading(summary)),
             _run_table(tables.run_table(title, columns, shown), tables.unmeasured_note([run for _, run in columns])),
             *_run_charts(largest, data.step_runs(index), f"s{index}")]
    return (f'<section class="step" id="step-{index}" data-step="{index}"><h2>Step {index}: {escape(table.name)} '
            f'<small>({escape(changed)})</small></h2>\n' + "\n".join(parts) + "</section>")


def _step_durability(found: Durability | None) -> str:
    """Each crash mode's class with its recovery, documented window and (no loss) the bound; "" when not tested."""
    if found is None:
        return ""
    modes = "".join(f"<li>{escape(mode.mode.value)}: {escape(mode.details())}</li>" for mode in found.modes)
    ids = ", ".join(map(str, found.test_ids[:12])) + (" …" if len(found.test_ids) > 12 else "")
    return (f'<div class="durability"><p><strong>Durability</strong> <span class="note">(crash test'
            f'{"s" if len(found.test_ids) > 1 else ""} {ids})</span>: {_durability(found)}</p><ul>{modes}</ul></div>')


def _knobs(knobs: Sequence[tuple[str, str, bool]]) -> str:
    """The knobs set (changed ones highlighted); the others are as the engine was configured."""
    shown = " ".join(f'<code class="{"changed" if changed else ""}">{escape(k)}={escape(v)}</code>'
                     for k, v, changed in knobs) or "engine defaults"
    return (f'<p class="knobs"><strong>Configuration:</strong> {shown} '
            '<span class="note">(every other knob as the engine was configured)</span></p>')


def _reported_settings(settings: Mapping[str, str]) -> str:
    """What the engine itself said it ran with: a server of the user's keeps its own configuration."""
    if not settings:
        return ""
    shown = " ".join(f"<code>{escape(k)}={escape(v)}</code>" for k, v in settings.items())
    return f'<p class="knobs"><strong>The engine reported:</strong> {shown}</p>'


def _step_results(table: tables.StepTable, shown: Presentation, heading: str) -> str:
    """The step's table, a row per load level; ``heading``: its first column's (``tables.level_heading``)."""
    headline = shown.headline
    header = [heading, "Load s", "TPS", f"{headline.name} ± 95 % CI", headline.committed_name,
              f"{shown.label(headline.transaction)} p90 ms", "vs previous (95 % CI)",
              "Verdict vs previous", "vs baseline (95 % CI)", "Verdict vs baseline",
              *(["Durability"] if table.crash_tested else [])]
    # The crash tests are of the step's configuration, not of a load level: its class on the first row only.
    durability = [_durability(table.durability)] if table.crash_tested else []
    rows = ([escape(r.level.label) + (f' <span class="fail">({r.failed} failed)</span>' if r.failed else ""),
             _estimate(r.load_s, 1), _estimate(r.tps, 1), _estimate(r.headline),
             _estimate(r.committed), _estimate(r.p90_headline_s, 1, 1000), _ratio(r.vs_previous, sep="<br>"),
             _verdict(r.vs_previous),
             _ratio(r.vs_baseline, sep="<br>"), _verdict(r.vs_baseline),
             *(durability if index == 0 else [""] * len(durability))] for index, r in enumerate(table.rows))
    return _table(header, rows, "step-table")


def _run_table(table: tables.RunTable, note: str) -> str:
    """The run table, then why some of its figures are not measured (``note``, may be empty)."""
    rows = ([escape(row.label), *(_number(v, row.digits) for v in row.values)] for row in table.rows)
    explained = f'<p class="note">{escape(note)}</p>' if note else ""
    return f"<h3>{escape(table.title)}</h3>" + _table(["", *table.columns], rows, "run-table") + explained


def _run_charts(largest: RunData | None, runs: Sequence[RunData], key: str) -> list[str]:
    """Histograms, CPU and I/O of the representative run; throughput over time of every run given."""
    parts = []
    if largest is not None:
        parts.append(_chart(f"chart-histograms-{key}", "histograms", charts.response_histograms(
            largest.report.figures, f"Response-time distribution, {largest.label} (5.6.1: 0 to 4 × p90)",
            largest.report.presentation)))
    timeline = [(r.label, r.report.figures, checkpoint_times(r.metrics)) for r in runs if r.complete]
    if timeline:
        parts.append(_chart(f"chart-timeline-{key}", "timeline",
                            charts.throughput_over_time(timeline, "Throughput against elapsed time (5.6.3)",
                                                        runs[0].report.presentation.headline)))
    if largest is not None:
        window = largest.report.record.window
        parts.append(_chart(f"chart-cpu-{key}", "cpu", charts.cpu_over_time(
            cpu_timeline(largest.metrics), window, f"CPU over time, {largest.label}")))
        parts.append(_chart(f"chart-io-{key}", "io", charts.io_over_time(
            disk_timeline(largest.metrics), window, f"I/O over time, {largest.label}")))
    return parts


# --- spec conformance -----------------------------------------------------------------------------------------


def _conformance(rows: Sequence[tables.Conformance], shown: Presentation) -> str:
    if not rows:
        return _section("Spec conformance", ["<p class=note>no runs</p>"], "conformance")
    declared = rows[0]  # a table of what the workload declares none of (bands, limits) is left out
    parts = [f"<p>{_label(shown)} {escape(shown.conformance)}</p>"]
    if declared.validity:
        parts += ["<h3>Input validity (5.5.1.5)</h3>", _bands(rows, lambda r: r.validity, "validity")]
    if declared.mix:
        parts += ["<h3>Mix (5.2.3: share of all transactions, %)</h3>", _bands(rows, lambda r: r.mix, "mix")]
    if declared.response_limits:
        parts += ["<h3>90th-percentile response-time limits (5.2.5.3)</h3>", _limits(rows)]
    consistency = ["<h3>Consistency (each condition with its clause)</h3>", _consistency(rows)]
    return _section("Spec conformance", [*parts, *consistency], "conformance")


def _band_cell(band: BandResult) -> str:
    status = band.note or band.status
    css = "status-" + band.status.lower().replace(" ", "-").replace("/", "-")
    return f'{band_value_text(band)} <span class="{css}" title="{escape(status)}">{escape(band.status)}</span>'


def _bands(rows: Sequence[tables.Conformance], pick, css: str) -> str:
    first = pick(rows[0])
    header = ["Run", "Status", *(f"{b.name.replace('_', ' ')} [{b.low:g}–{b.high:g}]" for b in first)]
    body = ([escape(r.label), escape(r.status), *(_band_cell(b) for b in pick(r))] for r in rows)
    return _table(header, body, css, 2)


def _limits(rows: Sequence[tables.Conformance]) -> str:
    header = ["Run", *(f"{name} (limit {limit:g} s)" for name, _, limit, _ in rows[0].response_limits)]
    def cell(p90: float | None, ok: bool | None) -> str:
        if p90 is None:
            return '<span class="status-no-data">no data</span>'
        return f'{p90 * 1000:,.1f} ms <span class="{"pass" if ok else "fail"}">{"ok" if ok else "over"}</span>'
    body = ([escape(r.label), *(cell(p90, ok) for _, p90, _, ok in r.response_limits)] for r in rows)
    return _table(header, body, "limits")


def _consistency_cell(record: CheckResult) -> str:
    if record.passed is None:
        return f'<span class="skipped" title="{escape(record.detail)}">skipped</span>'
    css, text = ("pass", "pass") if record.passed else ("fail", "FAIL")
    return f'<span class="{css}" title="{escape(record.detail)}">{text}</span>'


def _consistency(rows: Sequence[tables.Conformance]) -> str:
    clauses = [clause for _, clause in sorted({(c.condition, c.clause) for r in rows for c in r.consistency})]
    if not clauses:
        return "<p class=note>no consistency check was stored for these runs</p>"
    header = ["Run", *clauses]
    body = ([escape(r.label), *(_consistency_cell(by[c]) if c in by else "-" for c in clauses)]
            for r in rows for by in [{c.clause: c for c in r.consistency}])
    return _table(header, body, "consistency")
