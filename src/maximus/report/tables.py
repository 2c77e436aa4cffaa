"""What each table of the HTML report shows, as plain data: header, warnings, steps, run table, conformance.

Pure functions of ``analysis.bundle`` objects, like ``report.charts``: values stay numbers (or
``analysis`` estimates and ratios) and the renderer formats them. A figure a run did not measure is
``None``, which the report prints as "not measured".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from maximus import environment
from maximus.analysis.compare import Estimate, Ratio, Verdict
from maximus.analysis.bundle import ExperimentData, RunData, representative
from maximus.analysis.durability import Durability
from maximus.analysis.experiment import ExperimentSummary
from maximus.analysis.stats import LatencySummary
from maximus.report.format import fixed_rate, layout_text, measured_text, pacing_text, transactions_text
from maximus.experiment.model import Experiment
from maximus.experiment.plan import Level
from maximus.records import BandResult, CheckResult, Presentation

NOISY_HALF_WIDTH_PERCENT = 10.0  # a cell whose headline interval is wider than ±10 % cannot resolve small gains
SIGNIFICANT = (Verdict.FASTER, Verdict.SLOWER)


# --- header ------------------------------------------------------------------------------------------


def experiment_facts(data: ExperimentData) -> list[tuple[str, str]]:
    """Experiment, engine and version, workload, plan and dates, as (label, value) rows."""
    record, experiment, summary = data.report.record, data.report.experiment, data.report.summary
    workload, hygiene, shown = experiment.workload, experiment.hygiene, data.report.presentation
    runs = [r.report.record for r in data.runs]
    rows = [("Experiment", f"{record.id}: {experiment.name}"), ("Description", experiment.description),
            ("Engine", _engine_versions(data.runs) or experiment.engine),
            ("Workload", f"{shown.benchmark} · {shown.scale} · {workload.warmup_s:g} s warm-up · "
                         f"{workload.duration_s:g} s measured · {shown.details}"),
            ("Plan", f"{len(experiment.steps)} configurations × clients {', '.join(map(str, experiment.clients))} × "
                     f"{_rates(experiment)}{experiment.repeats} repeat(s), {experiment.order.value}; "
                     f"load {hygiene.load.value}, restore {'on' if hygiene.restore else 'off'}, drop caches "
                     f"{'on' if hygiene.drop_caches else 'off'}"),
            ("Runs", f"{summary.finished} of {summary.planned} finished · status {record.status}"),
            ("Created", _date(record.created_at)), ("Finished", _date(record.finished_at))]
    if runs:
        rows.append(("Runs took place", f"{_date(runs[0].started_at)} to {_date(runs[-1].finished_at)}"))
    return [(label, value) for label, value in rows if value]


def _rates(experiment: Experiment) -> str:
    """A rate sweep's rates as the plan multiplies them ("rates 20, 60/s (regular arrivals) × "); "" for a closed
    loop."""
    if not experiment.rates:
        return ""
    return f"rates {', '.join(f'{rate:,g}' for rate in experiment.rates)}/s ({experiment.arrivals} arrivals) × "


def level_heading(summary: ExperimentSummary, sep: str = " ") -> str:
    """The heading of a step table's first column: "Clients", or in a rate sweep "Clients @ rate" (``sep`` before the
    rate's part: a line break where the column is narrow)."""
    return f"Clients{sep}@ rate" if summary.swept else "Clients"


def run_facts(run: RunData) -> list[tuple[str, str]]:
    record = run.report.record
    spec, shown = record.spec, run.report.presentation
    pacing = f"{pacing_text(spec)} · " if pacing_text(spec) else ""  # a fixed-rate run's; a closed loop says nothing
    return [("Run", str(record.id)), ("Engine", _engine_versions([run])),
            ("Workload", f"{shown.benchmark} · {shown.scale} · {spec.terminals} terminal(s) · {pacing}"
                         f"{transactions_text(spec)} transactions · {spec.warmup_s:g} s warm-up · "
                         f"{measured_text(record)} measured · {shown.details} · seed {spec.seed}"),
            ("Status", record.status.value), ("Started", _date(record.started_at)),
            ("Finished", _date(record.finished_at)),
            ("Load time", "-" if record.load_seconds is None else
             f"{record.load_seconds:,.1f} s ({'built for this run' if record.loaded_in_run else 'built earlier'})"),
            *([("Storage", storage)] if (storage := layout_text(record)) else [])]


def _date(stamp: str | None) -> str:
    return (stamp or "").replace("T", " ").replace("+00:00", " UTC")


def _engine_versions(runs: Sequence[RunData]) -> str:
    found = {(r.report.record.spec.engine, r.report.record.environment.get("engine", {}).get("version", ""))
             for r in runs}
    return ", ".join(f"{name} {version}".strip() for name, version in sorted(found))


def machine_facts(runs: Sequence[RunData]) -> list[tuple[str, str]]:
    """The environment fingerprint of the first run (``environment.describe``), plus a note when runs differ."""
    fingerprints = [r.report.record.environment for r in runs if r.report.record.environment]
    if not fingerprints:
        return []
    rows = environment.describe(dict(fingerprints[0]))
    differing = {_host_key(f) for f in fingerprints}
    if len(differing) > 1:
        rows.append(("Note", f"the runs saw {len(differing)} different machines or storage set-ups"))
    return rows


def _host_key(fingerprint) -> str:
    return repr({k: v for k, v in fingerprint.items() if k not in ("captured_at", "storage")}
                | {"device": fingerprint.get("storage", {}).get("device")})


# --- warnings ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Notice:
    """A warning of the report: its kind (noisy, client-bound, validity, durability, failed, run), its text
    and the runs it concerns (empty when it concerns a configuration)."""

    kind: str
    text: str
    runs: tuple[int, ...] = ()


def experiment_notices(data: ExperimentData) -> list[Notice]:
    summary, experiment = data.report.summary, data.report.experiment
    notices = [Notice("noisy", w) for w in summary.warnings]
    wide = [(experiment.steps[c.step].name, c.level, c.headline.half_width_percent) for c in summary.cells
            if not math.isnan(c.headline.half_width_percent)
            and c.headline.half_width_percent > NOISY_HALF_WIDTH_PERCENT]
    if wide:
        cells = ", ".join(f"{name} at {level.long_label} ±{width:.0f} %" for name, level, width in wide)
        notices.append(Notice("noisy", f"{summary.figure.name} 95 % interval wider than "
                                       f"±{NOISY_HALF_WIDTH_PERCENT:.0f} % in {len(wide)} of {len(summary.cells)} "
                                       f"cells ({cells}): add repeats or lengthen the runs to resolve smaller gains"))
    return notices + run_notices(data.runs)


def run_notices(runs: Sequence[RunData]) -> list[Notice]:
    """Client-bound runs, failed runs, validity bands missed, then each stored run warning once, with its runs.

    A warning the engine stored for a knob value that weakens durability (``name=value weakens durability``,
    for one of the run's own knobs) is of kind durability and names the steps whose runs carry it.
    """
    notices, bounds = [], set()
    for run in runs:
        monitoring = run.report.monitoring
        bound = monitoring.figures.client_bound if monitoring else None
        if bound:
            notices.append(Notice("client-bound", f"run {run.id}: {bound}", (run.id,)))
            bounds.add(bound)
        if not run.complete:
            reason = "; ".join(run.report.record.errors) or "no reason stored"
            notices.append(Notice("failed", f"run {run.id} {run.report.record.status.value}: {reason}", (run.id,)))
    notices += validity_notices(runs)
    grouped: dict[str, list[RunData]] = {}
    for run in runs:
        for text in run.report.warnings:
            if text not in bounds:  # a client-bound run's warning is shown above
                grouped.setdefault(text, []).append(run)
    return notices + [_stored_warning(text, carriers) for text, carriers in grouped.items()]


def _stored_warning(text: str, runs: Sequence[RunData]) -> Notice:
    knobs = runs[0].report.record.effective_knobs
    if text not in {f"{name}={value} weakens durability" for name, value in knobs.items()}:
        return Notice("run", text, tuple(r.id for r in runs))
    steps = list(dict.fromkeys(r.planned.step_name for r in runs if r.planned))
    return Notice("durability", (f"{', '.join(steps)}: " if steps else "") + text, tuple(r.id for r in runs))


def validity_notices(runs: Sequence[RunData]) -> list[Notice]:
    """One notice per validity band (5.5.1.5, 2.7.4.2) that some run missed, with each such run's value."""
    missed: dict[tuple[str, float, float, str], list[tuple[int, float]]] = {}
    for run in runs:
        for band in run.report.validity:
            if band.status == "OUT OF BAND" and band.value is not None:
                missed.setdefault((band.name, band.low, band.high, band.clause), []).append((run.id, band.value))
    return [Notice("validity", f"{name.replace('_', ' ')} outside {low:g}–{high:g} ({clause}) in {len(found)} of "
                               f"{len(runs)} run(s): " + ", ".join(f"run {i} {v:.2f}" for i, v in found),
                   )  # the text names the runs already
            for (name, low, high, clause), found in missed.items()]


# --- summary and steps --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """Baseline against the final step at the highest load level, and each step's verdicts."""

    headline: str
    level: Level
    baseline: str
    final: str
    figure: str  # the headline's name: "tpmC"
    headline_baseline: Estimate
    headline_final: Estimate
    headline_gain: Ratio | None
    load_baseline: Estimate
    load_final: Estimate
    load_gain: Ratio | None
    verdicts: tuple[tuple[str, tuple[tuple[Level, Ratio], ...], bool], ...]  # step, (level, vs previous), significant
    durability: tuple[Durability | None, ...] = ()  # per step, the baseline's first; empty: no step crash-tested


def summary(data: ExperimentData) -> Summary:
    s, steps = data.report.summary, data.report.experiment.steps
    level, last = s.highest_level, len(steps) - 1
    first, final = s.level_cell(0, level), s.level_cell(last, level)
    verdicts = []
    for index in range(1, len(steps)):
        ratios = tuple((at, s.level_cell(index, at).step_gain) for at in s.levels)
        verdicts.append((steps[index].name, ratios, any(r.verdict in SIGNIFICANT for _, r in ratios)))
    return Summary(s.headline(), level, steps[0].name, steps[last].name, s.figure.name, first.headline,
                   final.headline, final.vs_baseline,
                   first.load_s, final.load_s, final.load_vs_baseline, tuple(verdicts),
                   s.durability if s.crash_tested else ())


@dataclass(frozen=True)
class StepRow:
    level: Level
    failed: int
    load_s: Estimate
    tps: Estimate
    headline: Estimate  # TPC-C: tpmC
    committed: Estimate  # TPC-C: NOPM
    p90_headline_s: Estimate  # TPC-C: New-Order's p90
    vs_previous: Ratio | None
    vs_baseline: Ratio | None


@dataclass(frozen=True)
class StepTable:
    """The classic tuning articles' form: the whole configuration with the changed knobs marked, then results
    per load level (client count, and in a rate sweep rate)."""

    index: int
    name: str
    changes: tuple[tuple[str, str, str], ...]  # (knob, before, after); empty for the baseline
    knobs: tuple[tuple[str, str, bool], ...]  # (knob, value, changed by this step): every knob the file sets
    rows: tuple[StepRow, ...]
    crash_tested: bool = False  # whether any step of the experiment was: the table has a durability column then
    durability: Durability | None = None  # this step's; None: not crash-tested


def step_table(data: ExperimentData, index: int) -> StepTable:
    steps, s = data.report.experiment.steps, data.report.summary
    step, previous = steps[index], steps[index - 1] if index else None
    changes = tuple((k, step.replaced.get(k, previous.knobs.get(k, "default")), v)
                    for k, v in step.changes.items()) if previous else ()
    knobs = tuple((k, v, previous is not None and k in step.changes) for k, v in step.knobs.items())
    rows = tuple(StepRow(level, cell.failed, cell.load_s, data.tps[index, level], cell.headline, cell.committed,
                         cell.p90_headline_s, cell.vs_previous, cell.vs_baseline)
                 for level in s.levels for cell in [s.level_cell(index, level)])
    return StepTable(index, step.name, changes, knobs, rows, s.crash_tested, s.step_durability(index))


# --- the run table of the HP white paper --------------------------------------------------------------


@dataclass(frozen=True)
class RunTableRow:
    label: str
    values: tuple[float | None, ...]  # one per column; None: not measured
    digits: int = 1


@dataclass(frozen=True)
class RunTable:
    title: str
    columns: tuple[str, ...]  # e.g. "2 clients (run 14)"
    rows: tuple[RunTableRow, ...]


def _monitored(run: RunData | None, pick) -> float | None:
    figures = run.report.monitoring.figures if run and run.report.monitoring else None
    value = pick(figures) if figures is not None and figures.monitored else None
    return None if value is None or math.isnan(value) else float(value)


_MONITORED_ROWS = (  # label, digits shown, the figure in analysis.monitoring.MonitoringFigures
    ("CPU user %", 1, lambda m: m.cpu and m.cpu.user), ("CPU sys %", 1, lambda m: m.cpu and m.cpu.system),
    ("CPU wait (iowait) %", 1, lambda m: m.cpu and m.cpu.iowait), ("CPU idle %", 1, lambda m: m.cpu and m.cpu.idle),
    ("Physical reads/s", 1, lambda m: m.disk and m.disk.reads_per_s),
    ("Physical writes/s", 1, lambda m: m.disk and m.disk.writes_per_s),
    ("I/O rate MB/s", 2, lambda m: m.disk and m.disk.io_mb_per_s),
    ("Log-sync wait ms", 2, lambda m: m.log_sync_wait_ms),
    ("Data-file read wait ms", 2, lambda m: m.data_read_wait_ms),
)


def run_table(title: str, columns: Sequence[tuple[str, RunData | None]], shown: Presentation) -> RunTable:
    """One column per (label, run): tpmC, CPU u/s/w/i, reads/s, writes/s, I/O rate, log-sync and data-file read
    waits, then p90 / avg / max (ms) of every transaction type, Deferred-Delivery included."""
    runs = [run for _, run in columns]
    rows = [RunTableRow(shown.headline.name, tuple(float(r.report.figures.headline) if r else None for r in runs),
                        0)]
    rows += [RunTableRow(label, tuple(_monitored(r, pick) for r in runs), digits)
             for label, digits, pick in _MONITORED_ROWS]
    names = next((tuple(t.name for t in r.report.figures.transactions) for r in runs if r), ())
    for index, name in enumerate(names):
        for stat, pick in (("p90", lambda l: l.p90), ("avg", lambda l: l.average), ("max", lambda l: l.maximum)):
            values = tuple(_ms(pick(r.report.figures.transactions[index].latency)) if r else None for r in runs)
            rows.append(RunTableRow(f"{shown.label(name)} {stat} ms", values))
    return RunTable(title, tuple(label for label, _ in columns), tuple(rows))


def _ms(seconds: float) -> float | None:
    return None if math.isnan(seconds) else seconds * 1000


def sweep_columns(data: ExperimentData, step: int) -> list[tuple[str, RunData | None]]:
    """The representative run of each load level of a step (see ``bundle.representative``)."""
    columns = []
    for level in data.report.summary.levels:
        run = representative(data.cell_runs(step, level))
        columns.append((level.long_label + (f" (run {run.id})" if run else " (no complete run)"), run))
    return columns


def unmeasured_note(runs: Sequence[RunData | None]) -> str:
    """Why rows of the run table say "not measured", from what the runs' samplers reported."""
    monitored = [r.report.monitoring.figures for r in runs if r and r.report.monitoring]
    if not any(m.monitored for m in monitored):
        return "No monitoring samples were stored for these runs: CPU, I/O and wait rows are not measured."
    if all(m.log_sync_wait_ms is None and m.data_read_wait_ms is None for m in monitored):
        sources = sorted({s for m in monitored for s in m.sources if s != "monitor"})
        return (f"Log-sync and data-file read waits are not measured: this run's samplers ({', '.join(sources)}) "
                "report no wait events (SQLite has no wait interface).")
    return ""


# --- a fixed-rate run's response times ---------------------------------------------------------------------

RESPONSE_STATS = (("p50", "p50"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"), ("avg", "average"),
                  ("max", "maximum"))  # (heading, ``LatencySummary`` field)


@dataclass(frozen=True)
class ResponseTimes:
    """A transaction of a fixed-rate run, in ms in the order of ``RESPONSE_STATS``: its latency from the intended
    start (what a user waiting since then saw) beside its service time from the actual start (what the database
    took); None where nothing was measured, and for the service time of a transaction no schedule starts
    (Deferred-Delivery, queued by a Delivery)."""

    transaction: str
    completed: int
    latency: tuple[float | None, ...]
    service: tuple[float | None, ...]


def response_times(run: RunData) -> list[ResponseTimes]:
    """A row per transaction of a fixed-rate run; none for a closed-loop run, whose run table has its latencies."""
    figures, shown = run.report.figures, run.report.presentation
    if not fixed_rate(figures):
        return []
    return [ResponseTimes(shown.label(t.name), t.completed, _stats(t.latency), _stats(t.service))
            for t in figures.transactions]


def _stats(summary: LatencySummary | None) -> tuple[float | None, ...]:
    return tuple(_ms(getattr(summary, field)) if summary else None for _, field in RESPONSE_STATS)


# --- spec conformance ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conformance:
    run_id: int
    label: str  # the run's place in the plan
    status: str
    benchmark: str  # Presentation.benchmark
    conforming: bool
    validity: tuple[BandResult, ...]
    mix: tuple[BandResult, ...]
    response_limits: tuple[tuple[str, float | None, float, bool | None], ...]  # name, p90 s, limit s, within
    consistency: tuple[CheckResult, ...]


def conformance(runs: Sequence[RunData]) -> list[Conformance]:
    """Per run: validity bands (5.5.1.5), mix (5.2.3), p90 limits (5.2.5.3) and consistency (3.3.2)."""
    rows = []
    for run in runs:
        report = run.report
        shown = report.presentation
        limits = tuple((shown.label(t.name), None if math.isnan(t.latency.p90) else t.latency.p90,
                        shown.response_time_limits[t.name], None if math.isnan(t.latency.p90)
                        else t.latency.p90 <= shown.response_time_limits[t.name])
                       for t in report.figures.transactions if t.name in shown.response_time_limits)
        rows.append(Conformance(run.id, run.long_label, report.record.status.value, shown.benchmark,
                                shown.conforming, tuple(report.validity), tuple(report.mix), limits,
                                tuple(report.consistency)))
    return rows
