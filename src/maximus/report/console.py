"""Terminal tables for runs, loads and checks (rich)."""

from __future__ import annotations

import math
from typing import Container, Iterable, Mapping, Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from maximus import environment
from maximus.analysis.device import DeviceComparison
from maximus.analysis.metrics import RunFigures
from maximus.analysis.monitoring import EngineStatistic, MonitoringFigures, RunColumn, RunMonitoring, WaitEvent
from maximus.analysis.stats import LatencySummary
from maximus.report.format import (band_value_text, device_job_text, fixed_rate, layout_text, measured_text,
                                   pacing_text, transactions_text)
from maximus.records import BandResult, CheckResult, Headline, Presentation, RunRecord

KNOBS_SHOWN_WHOLE = 30  # SQLite's knobs, with room to spare; not a server's hundreds of settings
_STATUS_STYLE = {"ok": "green", "OUT OF BAND": "bold red", "n/a": "dim", "no data": "yellow"}


def _ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1000:,.1f}"


def render_header(console: Console, record: RunRecord, shown: Presentation) -> None:
    spec = record.spec
    pacing = f" · {pacing_text(spec)}" if pacing_text(spec) else ""  # a fixed-rate run's; a closed loop says nothing
    console.print(f"[bold]Run {record.id}[/] · {spec.engine} {record.environment.get('engine', {}).get('version', '')}"
                  f" · {shown.scale} · {spec.terminals} terminal(s){pacing}"
                  f" · {transactions_text(spec)} transactions · {measured_text(record)} measured"
                  f" after {spec.warmup_s:g} s warm-up · seed {spec.seed} · [bold]{record.status.value}[/]")
    _render_knobs(console, record)
    if "isolation" in spec.options:
        console.print(f"Isolation: {escape(spec.options['isolation'])}")
    how = "built for this run" if record.loaded_in_run else "pristine copy restored; built earlier"
    if record.load_seconds is not None:
        console.print(f"Load time: [bold]{record.load_seconds:,.1f} s[/] for {shown.scale} ({how})")
    if layout := layout_text(record):
        console.print(f"Storage: {escape(layout)}")


def _render_knobs(console: Console, record: RunRecord) -> None:
    """Every knob when they fit on a line or two (SQLite's); a server's hundreds of settings would bury the
    ones that matter, so then the run's own knobs and the settings the server reported."""
    def pairs(settings: Mapping[str, str], marked: Container[str] = ()) -> str:
        return " ".join(f"[cyan]{escape(f'{k}={v}')}[/]" if k in marked else escape(f"{k}={v}")
                        for k, v in settings.items())

    if len(record.effective_knobs) <= KNOBS_SHOWN_WHOLE:
        # the run's operating-system knobs are not the engine's: they come after its own, marked alike
        console.print(f"Knobs: {pairs({**record.effective_knobs, **record.spec.knobs}, record.spec.knobs)}")
        return
    console.print(f"Knobs set by the run: {pairs(record.spec.knobs, record.spec.knobs) or 'none'}")
    if record.engine_settings:
        console.print(f"Server reported: {pairs(record.engine_settings)} (every setting: `maximus export`)")


def render_figures(console: Console, figures: RunFigures, shown: Presentation) -> None:
    table = Table(title="Throughput (measured window)", title_justify="left", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(justify="right", no_wrap=True)
    table.add_column()
    headline = shown.headline
    table.add_row(headline.name, f"[bold]{figures.headline:,}[/]", f"{headline.meaning} · {shown.benchmark}")
    table.add_row(headline.committed_name, f"{figures.committed:,.0f}", headline.committed_meaning)
    table.add_row("TPM", f"{figures.tpm:,.0f}", "all business transactions per minute")
    console.print(table)
    outcomes = " · ".join(f"{name.replace('_', ' ')} {count:,}" for name, count in figures.outcomes.items())
    console.print(f"Outcomes in the window: {outcomes}")
    console.print(_latency_table(figures, shown))


# (heading, ``LatencySummary`` field) of the response-time table's columns
LATENCY_COLUMNS = (("p50", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"), ("Avg", "average"),
                   ("Max", "maximum"))
SERVICE_COLUMNS = (("p90", "p90"), ("p99", "p99"))  # a fixed-rate run's, beside its latencies (120 columns hold them)


def _latency_table(figures: RunFigures, shown: Presentation) -> Table:
    """Each transaction's response times; in a fixed-rate run its latency from the intended start, then its service
    time from the actual start, each under its own heading: how long users waited, and how long the database took."""
    scheduled = fixed_rate(figures)
    title = "Response times (ms)" + (": latency (from intended start) and service time (from actual start)"
                                     if scheduled else "")
    table = Table(title=title, title_justify="left")
    table.add_column("Transaction")
    table.add_column("Count", justify="right")
    for group, columns in (("latency", LATENCY_COLUMNS), ("service", SERVICE_COLUMNS if scheduled else ())):
        for index, (heading, _) in enumerate(columns):  # a fixed-rate run's headings: the group's name above them
            table.add_column(f"{group if index == 0 else ''}\n{heading}" if scheduled else heading, justify="right")
    table.add_column("p90 limit", justify="right")
    for t in figures.transactions:
        limit = shown.response_time_limits.get(t.name)
        ok = "" if limit is None or math.isnan(t.latency.p90) else ("ok" if t.latency.p90 <= limit else "[red]over[/]")
        service = _cells(t.service, SERVICE_COLUMNS) if scheduled else []
        table.add_row(shown.label(t.name), f"{t.completed:,}", *_cells(t.latency, LATENCY_COLUMNS), *service,
                      f"{limit:g} s {ok}" if limit else "")
    return table


def _cells(summary: LatencySummary | None, columns: Sequence[tuple[str, str]]) -> list[str]:
    """The summary's figures in ms; "-" without one (Deferred-Delivery's service time: no schedule starts it)."""
    return [_ms(getattr(summary, field)) if summary else "-" for _, field in columns]


_BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    top = max(values, default=0) or 1
    return "".join(_BLOCKS[round(v / top * (len(_BLOCKS) - 1))] for v in values)


def render_timeline(console: Console, figures: RunFigures, headline: Headline, bucket_s: int = 1) -> None:
    """Throughput against elapsed time (5.6.3), warm-up included, so a ramp or a stall is visible."""
    if not figures.per_second:
        return
    seconds = [s for s, _, _ in figures.per_second]
    per_bucket = [headline.rate(sum(n for s, n, _ in figures.per_second if b <= s < b + bucket_s), bucket_s)
                  for b in range(0, max(seconds) + 1, bucket_s)]
    warmup, end = int(figures.window.start), int(figures.window.end)
    measured = per_bucket[warmup:end]
    console.print(f"{headline.per_second_name}/{headline.period} per second, "
                  f"warm-up [dim]{sparkline(per_bucket[:warmup])}[/] "
                  f"measured {sparkline(measured)}  (min {min(measured or [0]):,.0f}, "
                  f"max {max(measured or [0]):,.0f})")


def render_bands(console: Console, title: str, bands: Sequence[BandResult]) -> None:
    """The bands as a table; none when the workload declares no such bands."""
    if not bands:
        return
    table = Table(title=title, title_justify="left")
    for column in ("Figure", "Value", "Band", "Sample", "Status"):
        table.add_column(column)
    for band in bands:
        status = band.note or band.status
        table.add_row(band.name.replace("_", " "), band_value_text(band), f"{band.low:g} – {band.high:g}",
                      f"{band.sample:,}", f"[{_STATUS_STYLE.get(band.status, '')}]{status}[/]")
    console.print(table)


def render_consistency(console: Console, results: Iterable[CheckResult]) -> None:
    table = Table(title="Consistency (each condition with its clause)", title_justify="left")
    for column in ("Clause", "Condition", "Result", "Detail"):
        table.add_column(column)
    for r in results:
        verdict = "[dim]skipped[/]" if r.passed is None else ("[green]pass[/]" if r.passed else "[bold red]FAIL[/]")
        table.add_row(r.clause, r.description, verdict, r.detail)
    console.print(table)


def render_messages(console: Console, title: str, messages: Iterable[str], style: str) -> None:
    for message in messages:
        console.print(f"[{style}]{title}:[/] {message}")


def render_environment(console: Console, fingerprint: Mapping) -> None:
    table = Table(title="Environment", title_justify="left", show_header=False)
    for label, value in environment.describe(dict(fingerprint)):
        table.add_row(label, value)
    console.print(table)


# Above this many runs, ``runs`` lists them in plain columns: rich lays out a table of 1,000 rows in about a second.
PLAIN_LISTING_ABOVE = 200


def render_runs(console: Console, runs: Sequence[tuple[RunRecord, Presentation, int]]) -> None:
    """One row per (record, how its workload names it, its headline figure); the figure's column is headed by
    its name when every run's workload names it alike (TPC-C: tpmC)."""
    names = {shown.headline.name for _, shown, _ in runs}
    shared = names.pop() if len(names) == 1 else None
    headings = ("Run", "Started (UTC)", "Status", "Engine", "Workload", "Clients", "Mode", "Duration",
                shared or "Headline", "Knobs set")
    rows = [_run_row(record, shown, headline, shared) for record, shown, headline in runs]
    if len(rows) > PLAIN_LISTING_ABOVE:
        _plain_columns(console, "Runs", headings, rows)
        return
    table = Table(title="Runs", title_justify="left", pad_edge=False)  # one line a run in 120 columns
    for column in headings:
        table.add_column(column, no_wrap=column in ("Status", "Duration", shared or "Headline"))
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _run_row(r: RunRecord, shown: Presentation, headline: int, shared: str | None) -> tuple[str, ...]:
    knobs = " ".join(f"{k}={v}" for k, v in r.spec.knobs.items()) or "(defaults)"
    figure = f"{headline:,}" + ("" if shared else f" {shown.headline.name}")
    return (str(r.id), r.started_at.replace("T", " ")[:19], r.status.value, r.spec.engine,
            f"{r.spec.workload} {shown.short_scale}", str(r.spec.terminals), transactions_text(r.spec),
            measured_text(r), figure if r.window.end > r.window.start else "-", knobs)


def _plain_columns(console: Console, title: str, headings: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A title, then the headings and one line a row in columns two spaces apart, the last one as long as it is."""
    widths = [max(len(text) for text in column) for column in zip(headings, *rows)]
    lines = ["  ".join(text.ljust(width) for text, width in zip(row[:-1], widths)) + "  " + row[-1]
             for row in (headings, *rows)]
    console.out("\n".join([title, *lines]), highlight=False)


def render_histograms(console: Console, figures: RunFigures, shown: Presentation) -> None:
    """5.6.1: per-transaction response-time distribution, 0 to 4 × p90 in 20 equal bins."""
    for t in figures.transactions:
        if not t.completed:
            continue
        table = Table(title=f"{shown.label(t.name)} response times (ms)", title_justify="left")
        table.add_column("From")
        table.add_column("To")
        table.add_column("Count", justify="right")
        table.add_column("")
        peak = max(t.histogram.counts) or 1
        for low, high, count in zip(t.histogram.edges, t.histogram.edges[1:], t.histogram.counts):
            table.add_row(_ms(low), _ms(high), f"{count:,}", "█" * round(30 * count / peak))
        table.add_row("beyond", "", f"{t.histogram.beyond:,}", "")
        console.print(table)


# --- the run table of the classic tuning articles, and the monitoring details ---------------------------


def _figure(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def _monitored_rows(m: MonitoringFigures) -> list[str]:
    cpu, disk = m.cpu, m.disk
    return [_figure(cpu.user if cpu else None), _figure(cpu.system if cpu else None),
            _figure(cpu.iowait if cpu else None), _figure(cpu.idle if cpu else None),
            _figure(disk.reads_per_s if disk else None), _figure(disk.writes_per_s if disk else None),
            _figure(disk.io_mb_per_s if disk else None, 2), _figure(disk.read_wait_ms if disk else None, 2),
            _figure(disk.write_wait_ms if disk else None, 2), _figure(m.log_sync_wait_ms, 2),
            _figure(m.data_read_wait_ms, 2), _figure(m.tps_per_cpu_second, 0)]


_MONITORED_LABELS = ("CPU user %", "CPU sys %", "CPU iowait %", "CPU idle %", "Reads/s (data device)",
                     "Writes/s (data device)", "I/O rate MB/s", "Device read wait ms", "Device write wait ms",
                     "Log sync wait ms", "Data-file read wait ms", "TPS per CPU-second")


def run_table_rows(columns: Sequence[RunColumn], shown: Presentation) -> list[tuple[str, list[str]]]:
    """The rows of the run table, one cell per column: the headline (tpmC), CPU, I/O, waits, then latencies.

    A latency cell is p90 / average / maximum in ms over the measured window; "-" marks a figure the
    run did not measure (see docs/monitoring.md for what each engine provides).
    """
    if not columns:
        return []
    rows = [(shown.headline.name, [f"{c.figures.headline:,}" for c in columns])]
    monitored = [_monitored_rows(c.monitoring) for c in columns]
    rows += [(label, [cells[i] for cells in monitored]) for i, label in enumerate(_MONITORED_LABELS)]
    for i, name in enumerate(t.name for t in columns[0].figures.transactions):
        cells = []
        for c in columns:
            latency = c.figures.transactions[i].latency
            cells.append(f"{_ms(latency.p90)} / {_ms(latency.average)} / {_ms(latency.maximum)}")
        rows.append((f"{shown.label(name)} p90 / avg / max ms", cells))
    return rows


def render_run_table(console: Console, columns: Sequence[RunColumn], shown: Presentation) -> None:
    """The run table: one column per run, headed by its terminal count."""
    if not columns:
        return
    table = Table(title="Run table (measured window)", title_justify="left")
    table.add_column("Terminals")
    for column in columns:
        table.add_column(column.label, justify="right")
    for label, cells in run_table_rows(columns, shown):
        table.add_row(label, *cells)
    console.print(table)


def monitoring_lines(run: RunMonitoring) -> list[str]:
    """The monitoring details under the run table, as plain lines (rich markup allowed)."""
    m = run.figures
    if not m.monitored:
        return ["Monitoring: none stored for this run (run with --no-monitor, or before monitoring existed)."]
    lines = [_groups_line(m, run.embedded)]
    if m.disk:
        d = m.disk
        lines.append(f"Data device {d.device}: {d.read_mb_per_s:,.2f} MB/s read, {d.written_mb_per_s:,.2f} MB/s "
                     f"written, busy {d.busy_percent:.0f} %")
    if m.context_switches_per_s is not None:
        lines.append(f"Context switches: {m.context_switches_per_s:,.0f}/s"
                     + (f" · CPU steal {m.cpu.steal:.1f} %" if m.cpu and m.cpu.steal else ""))
    lines += [*_engine_lines(m), *_check_lines(run)]
    if m.sampling_cpu_seconds is not None:
        lines.append(f"Monitoring cost: {m.sampling_cpu_seconds * 1000:,.0f} ms of CPU for the whole run")
    return lines


def _groups_line(m: MonitoringFigures, embedded: bool) -> str:
    parts = [f"{name} {g.cpus:.2f} CPUs ({g.processes} process{'es' if g.processes != 1 else ''})"
             for name, g in m.groups.items()]
    line = "Process CPU in the window: " + (" · ".join(parts) or "-")
    if embedded:
        line += ("\n  [dim]embedded engine: the database works inside the client processes, so their CPU is the "
                 "database's too; the client-bound check applies to server engines only[/]")
    elif "server" not in m.groups:
        line += "\n  [dim]the engine's samplers reported no server processes: no client-bound check[/]"
    elif m.client_bound:
        line += f"\n  [yellow]{m.client_bound}[/]"
    if m.hosts_cpu:  # a run from client hosts: what else their machines ran
        line += "\nClient hosts' machines in the window: " + " · ".join(
            f"{name} idle {cpu.idle:.0f} %" for name, cpu in m.hosts_cpu.items())
    return line


def _statistic(s: EngineStatistic) -> str:
    labels = " ".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
    if s.per_second is not None:
        value = f"+{s.value:,.0f} ({s.per_second:,.1f}/s)"
    else:
        value = environment.format_bytes(int(s.value)) if s.unit == "bytes" else f"{s.value:,.0f} {s.unit}"
    return f"{labels} {value}" if labels else value


def _wait(w: WaitEvent) -> str:
    """A sampled event as its share of the sessions' active time (what was sampled); a timed one as time."""
    if w.share is not None:
        return f"{w.event} {w.share:.1%} of active time (~{w.seconds:,.1f} s)"
    return f"{w.event} {w.seconds:,.1f} s" + (f" (avg {w.average_ms:.2f} ms)" if w.average_ms else "")


def _engine_lines(m: MonitoringFigures) -> list[str]:
    """Engine samplers' own statistics, one line per name: counters as increase and rate, gauges at their highest."""
    by_name: dict[tuple[str, str], list[EngineStatistic]] = {}
    for s in m.engine:
        by_name.setdefault((s.source, s.name), []).append(s)
    lines = [f"{source} {name}: " + " · ".join(map(_statistic, stats)) for (source, name), stats in by_name.items()]
    if m.waits:
        lines.append(f"Top wait events: {' · '.join(map(_wait, m.waits))}")
    if m.buffer_hit_ratio is not None:
        lines.append(f"Buffer hit ratio: {m.buffer_hit_ratio:.2%}")
    missing = [what for what, absent in (("wait events (so no log-sync or data-file read wait)", not m.waits),
                                         ("buffer hit ratio", m.buffer_hit_ratio is None)) if absent]
    if missing:
        samplers = ", ".join(s for s in m.sources if s != "monitor")
        lines.append(f"[dim]Not reported by this run's samplers ({samplers}): {' and '.join(missing)}; see "
                     "docs/monitoring.md[/]")
    return lines


def _check_lines(run: RunMonitoring) -> list[str]:
    return [f"Cross-check {c.name}: {'[green]ok[/]' if c.passed else '[bold red]MISMATCH[/]'} ({c.detail})"
            for c in run.checks]


def render_device(console: Console, device: DeviceComparison | None) -> None:
    """A storage-bound run against fio's matching job: both rates, the ratio with its interval, the verdict."""
    if device is None:
        return
    limit = device.limit
    access = device_job_text(limit.job)
    console.print("[bold]Against the device[/] (fio's matching job, before the run)")
    console.print(f"  fio {access}: {device.device:,.1f} {device.unit}, latency p50 {limit.latency_p50_us:,.0f} us, "
                  f"p99 {limit.latency_p99_us:,.0f} us", highlight=False)
    console.print(f"  the run: {device.database.mean:,.1f} {device.unit}: [bold]{escape(device.text())}[/]",
                  highlight=False)
    if device.disk is not None:
        engine = f"; the engine counted {device.engine_reads_per_s:,.1f} reads/s of its own" \
            if device.engine_reads_per_s is not None else ""
        console.print(f"  the data device {escape(device.disk.device)} in the window: {device.disk.reads_per_s:,.1f} "
                      f"reads/s, {device.disk.read_mb_per_s:,.1f} MB/s{engine}", highlight=False)
    console.print(f"  {escape(device.reason)}", highlight=False)


def render_monitoring(console: Console, run: RunMonitoring) -> None:
    console.print("[bold]Monitoring[/] (measured window)")
    for line in monitoring_lines(run):
        console.print(line)
