"""Every figure of a run or an experiment, and the raw time series, as JSON documents or CSV tables.

Pure functions of ``analysis.bundle`` objects; ``api.export`` writes what they return. Formats,
column by column, are in docs/report.md. Conventions shared by both formats:

- latencies and times are in seconds in JSON (as the analysis computes them); CSV columns say
  their unit in their name (``_ms``, ``_s``, ``_pct``, ``_per_s``);
- a value that was not measured or cannot be computed (NaN) is ``null`` in JSON, an empty CSV cell;
- ``schema`` numbers the document layout; it changes when a field changes meaning;
- the workload names its own fields: its headline figure and the same of committed transactions (TPC-C:
  ``tpmc``, ``nopm``), its settings, transactions and validity bands; nothing here knows TPC-C.
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
import math
from dataclasses import fields, is_dataclass
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

import numpy as np

from maximus.analysis.compare import Estimate, Ratio
from maximus.analysis.bundle import ExperimentData, RunData
from maximus.analysis.device import DeviceCell, DeviceComparison
from maximus.analysis.durability import Durability, failed_checks
from maximus.analysis.metrics import TransactionFigures
from maximus.analysis.rate import RateFigures
from maximus.records import CrashTestRecord, Headline
from maximus.samples import OUTCOMES, Samples

SCHEMA = 2  # 2: the workload names its settings and figures (spec.settings, headline)


def plain(value: Any) -> Any:
    """JSON-ready data: dataclasses and mappings as objects, sequences as lists, enums as their values,
    NaN and infinities as None."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


def ratio_data(ratio: Ratio | None) -> dict | None:
    """A ratio B/A with its 95 % interval, change in percent, verdict and repeats needed."""
    if ratio is None:
        return None
    return plain(ratio) | {"change_percent": plain(ratio.change_percent)}


# --- JSON ---------------------------------------------------------------------------------------------


def run_document(run: RunData) -> dict:
    """One run: configuration, figures, latencies, validity, mix, consistency, monitoring, raw series."""
    return {"kind": "run", "schema": SCHEMA, **_run(run)}


def _run(run: RunData) -> dict:
    report, record = run.report, run.report.record
    figures, headline = report.figures, report.presentation.headline
    timeline = per_second_key(headline)
    return {
        "run": plain(record) | {"benchmark": report.presentation.benchmark, "planned": plain(run.planned),
                                "warnings": list(report.warnings)},
        "figures": {headline.key: figures.headline, headline.committed_key: plain(figures.committed),
                    "tpm": plain(figures.tpm), "outcomes": dict(figures.outcomes), "counts": dict(figures.counts)},
        "headline": plain(headline),
        "transactions": [plain(t) for t in figures.transactions],
        "validity": [plain(b) | {"status": b.status} for b in report.validity],
        "mix": [plain(b) | {"status": b.status} for b in report.mix],
        "consistency": [plain(c) for c in report.consistency],
        "result_file": [plain(result) for result in report.deferred],
        "monitoring": plain(report.monitoring),
        "device": device_data(report.device),
        "rate": rate_data(report.rate),
        "series": {"per_second": [{"second": s, timeline: n, "transactions": t} for s, n, t in figures.per_second],
                   "metrics": [plain(m) for m in run.metrics]},
    }


def device_data(device: DeviceComparison | None) -> dict | None:
    """A storage-bound run against fio's matching job: the job, fio's figures and its JSON as it reported it (what
    every one of them traces to), the run's rate in the same unit with its batch-means interval, the ratio, the
    verdict and why; None for a run fio did not measure."""
    if device is None:
        return None
    limit = device.limit
    return {"job": plain(limit.job), "directory": limit.directory, "unit": device.unit,
            "fio": {"rate": plain(device.device), "iops": plain(limit.iops), "bytes_per_s": plain(limit.bytes_per_s),
                    "latency_p50_us": plain(limit.latency_p50_us), "latency_p99_us": plain(limit.latency_p99_us),
                    "output": plain(limit.output)},
            "database": plain(device.database), "ratio": plain(device.ratio), "verdict": device.verdict,
            "reason": device.reason}


def rate_data(rate: RateFigures | None) -> dict | None:
    """A fixed-rate run against its schedule: every figure of ``RateFigures`` (the backlog and late-start series as
    [second, count] pairs), then the ones derived from them; None for a closed-loop run."""
    if rate is None:
        return None
    return plain(rate) | {"ratio": rate.ratio, "backlog_growth": rate.backlog_growth, "sustained": rate.sustained,
                          "verdict": rate.verdict}


def device_cell_data(cell: DeviceCell | None) -> dict | None:
    """A cell against its device over the repeats (each run's own figures are in its ``device``); None when fio
    measured none of its runs."""
    if cell is None:
        return None
    return {"job": plain(cell.job), "unit": cell.unit, "database": plain(cell.database), "fio": plain(cell.device),
            "ratio": plain(cell.ratio), "verdict": cell.verdict, "verdicts": list(cell.verdicts),
            "run_ids": list(cell.run_ids)}


def per_second_key(headline: Headline) -> str:
    """How the timeline names the headline transaction's completions: "New-Orders" -> ``new_orders``."""
    return headline.per_second_name.lower().replace("-", "_").replace(" ", "_")


def _cell(cell: Any, headline: Headline) -> dict:
    """A cell's fields under the workload's names: ``headline`` becomes ``tpmc``, and so on."""
    renamed = {"headline": headline.key, "committed": headline.committed_key,
               "p90_headline_s": f"p90_{headline.transaction}_s"}
    return {renamed.get(key, key): value for key, value in plain(cell).items()}


def experiment_document(data: ExperimentData) -> dict:
    """The experiment, its plan, per cell (a step at a load level: its clients and, in a rate sweep, its ``rate``) the
    estimates, ratios and verdicts, then every run."""
    report = data.report
    summary = report.summary
    names = summary.step_names
    headline = report.presentation.headline
    cells = [_cell(c, headline) | {"step_name": names[c.step], "tps": plain(data.tps[c.step, c.level]),
                         "vs_previous": ratio_data(c.vs_previous), "vs_baseline": ratio_data(c.vs_baseline),
                         "load_vs_baseline": ratio_data(c.load_vs_baseline),
                         "durability": _durability_class(summary.step_durability(c.step)),
                         "device": device_cell_data(data.device.get((c.step, c.level)))} for c in summary.cells]
    steps = [{"step": index, "step_name": name, "durability": durability_data(summary.step_durability(index))}
             for index, name in enumerate(names)]
    return {"kind": "experiment", "schema": SCHEMA,
            "experiment": plain(report.record) | {"model": plain(report.experiment)},
            "headline": plain(headline),
            "summary": {"headline": summary.headline(), "planned": summary.planned, "finished": summary.finished,
                        "significant_steps": summary.significant_steps, "warnings": list(summary.warnings)},
            "steps": steps, "cells": cells, "runs": [_run(run) for run in data.runs],
            "crash_tests": [plain(record) for record in report.crash_tests]}


def durability_data(found: Durability | None) -> dict | None:
    """A step's durability from its crash tests, per mode with its class and (no loss) the 95 % upper bound of the
    per-cycle loss probability; None when the step was not crash-tested."""
    if found is None:
        return None
    return {"class": found.durability_class, "worst": found.worst.value, "test_ids": list(found.test_ids),
            "modes": [plain(mode) | {"class": mode.phrase(), "loss_bound": mode.loss_bound} for mode in found.modes]}


def _durability_class(found: Durability | None) -> str | None:
    return None if found is None else found.durability_class


def to_json(document: Mapping) -> str:
    return json.dumps(document, indent=2, allow_nan=False) + "\n"


# --- CSV ------------------------------------------------------------------------------------------------

Column = tuple[str, Callable[[RunData], Any]]


_STATS = ("average", "p50", "p90", "p95", "p99", "maximum")  # of a ``LatencySummary``, in the columns' order
_STAT_NAMES = {"average": "avg", "maximum": "max"}  # in a column's name


def _latency_columns(transactions: Sequence[str]) -> list[Column]:
    columns: list[Column] = []
    for name in transactions:
        columns.append((f"{name}_count", functools.partial(_completed, name)))
        for stat in _STATS:
            columns.append((f"{name}_{_STAT_NAMES.get(stat, stat)}_ms", functools.partial(_latency_ms, name, stat)))
    return columns


def _service_columns(transactions: Sequence[str]) -> list[Column]:
    """A fixed-rate run's service times, from each transaction's actual start: ``<type>_service_avg_ms`` beside
    ``<type>_avg_ms`` (from its intended start), and so on; empty for a closed-loop run."""
    return [(f"{name}_service_{_STAT_NAMES.get(stat, stat)}_ms", functools.partial(_service_ms, name, stat))
            for name in transactions for stat in _STATS]


def _service_ms(transaction: str, stat: str, run: RunData) -> float | None:
    figures = _figures_of(run, transaction)
    return getattr(figures.service, stat) * 1000 if figures and figures.service else None


def _figures_of(run: RunData, transaction: str) -> TransactionFigures | None:
    return next((t for t in run.report.figures.transactions if t.name == transaction), None)


def _completed(transaction: str, run: RunData) -> int | None:
    figures = _figures_of(run, transaction)
    return figures.completed if figures else None


def _latency_ms(transaction: str, stat: str, run: RunData) -> float | None:
    figures = _figures_of(run, transaction)
    return getattr(figures.latency, stat) * 1000 if figures else None


def _band(kind: str, name: str) -> Callable[[RunData], Any]:
    return lambda r: next((b.value for b in getattr(r.report, kind) if b.name == name), None)


def _monitored(pick: Callable[[Any], Any]) -> Callable[[RunData], Any]:
    def get(run: RunData) -> Any:
        figures = run.report.monitoring.figures if run.report.monitoring else None
        return pick(figures) if figures is not None and figures.monitored else None
    return get


_MONITORING: list[Column] = [
    ("cpu_user_pct", _monitored(lambda m: m.cpu and m.cpu.user)),
    ("cpu_system_pct", _monitored(lambda m: m.cpu and m.cpu.system)),
    ("cpu_iowait_pct", _monitored(lambda m: m.cpu and m.cpu.iowait)),
    ("cpu_idle_pct", _monitored(lambda m: m.cpu and m.cpu.idle)),
    ("cpu_steal_pct", _monitored(lambda m: m.cpu and m.cpu.steal)),
    ("reads_per_s", _monitored(lambda m: m.disk and m.disk.reads_per_s)),
    ("writes_per_s", _monitored(lambda m: m.disk and m.disk.writes_per_s)),
    ("read_mb_per_s", _monitored(lambda m: m.disk and m.disk.read_mb_per_s)),
    ("written_mb_per_s", _monitored(lambda m: m.disk and m.disk.written_mb_per_s)),
    ("read_wait_ms", _monitored(lambda m: m.disk and m.disk.read_wait_ms)),
    ("write_wait_ms", _monitored(lambda m: m.disk and m.disk.write_wait_ms)),
    ("log_sync_wait_ms", _monitored(lambda m: m.log_sync_wait_ms)),
    ("data_read_wait_ms", _monitored(lambda m: m.data_read_wait_ms)),
    ("tps_per_cpu_second", _monitored(lambda m: m.tps_per_cpu_second)),
]


def _device(pick: Callable[[DeviceComparison], Any]) -> Callable[[RunData], Any]:
    return lambda run: pick(run.report.device) if run.report.device else None


# A storage-bound run against fio's matching job (the run's rate as its batch means' mean); empty for any other run
_DEVICE: list[Column] = [
    ("device_unit", _device(lambda d: d.unit)), ("database_rate", _device(lambda d: d.database.mean)),
    ("fio_rate", _device(lambda d: d.device)), ("fio_ratio", _device(lambda d: d.ratio.mean)),
    ("fio_ratio_low", _device(lambda d: d.ratio.low)), ("fio_ratio_high", _device(lambda d: d.ratio.high)),
    ("device_verdict", _device(lambda d: d.verdict)),
]


def _rate(pick: Callable[[RateFigures], Any]) -> Callable[[RunData], Any]:
    return lambda run: pick(run.report.rate) if run.report.rate else None


# A fixed-rate run against its schedule (docs/report.md); empty for a closed-loop run
_RATE: list[Column] = [
    ("rate_target_per_s", _rate(lambda r: r.target)), ("rate_arrivals", _rate(lambda r: r.arrivals)),
    ("rate_achieved_per_s", _rate(lambda r: r.achieved)), ("rate_scheduled", _rate(lambda r: r.scheduled)),
    ("rate_done", _rate(lambda r: r.done)), ("rate_backlog_at_start", _rate(lambda r: r.backlog_at_start)),
    ("rate_backlog_at_end", _rate(lambda r: r.backlog_at_end)),
    ("rate_warmup_backlog", _rate(lambda r: r.warmup_backlog)), ("rate_unstarted", _rate(lambda r: r.unstarted)),
    ("rate_start_error_p99_ms", _rate(lambda r: r.start_error_p99 * 1000)),
    ("rate_sustained", _rate(lambda r: r.sustained)),
]


def _consistency(passed: bool | None) -> Callable[[RunData], int]:
    return lambda r: sum(1 for c in r.report.consistency if c.passed is passed)


def _planned(attribute: str) -> Callable[[RunData], Any]:
    return lambda r: getattr(r.planned, attribute) if r.planned else None


def _union(lists: Sequence[Sequence[str]]) -> list[str]:
    """Every name in the order it first appears."""
    return list(dict.fromkeys(name for names in lists for name in names))


def _setting(key: str) -> Callable[[RunData], Any]:
    return lambda r: r.report.record.spec.settings.get(key)


def _headline(key: str) -> Callable[[RunData], Any]:
    """The run's headline figure (or its committed form) under the CSV column ``key``; empty for a run whose
    workload names its figures otherwise."""
    def get(run: RunData) -> Any:
        headline = run.report.presentation.headline
        attribute = {headline.key: "headline", headline.committed_key: "committed"}.get(key)
        return getattr(run.report.figures, attribute) if attribute else None
    return get


def run_columns(runs: Sequence[RunData]) -> list[Column]:
    """The columns of ``runs_table``: fixed ones, then what the runs' workloads name (their settings, headline
    figures, transactions, validity bands and mix), each once, in the order the workloads give them; last the ones
    added since: a fixed-rate run's schedule and service times, and its planned rate."""
    reports = [run.report for run in runs]
    headlines = _union([[r.presentation.headline.key, r.presentation.headline.committed_key] for r in reports])
    transactions = _union([list(r.presentation.transaction_labels) for r in reports])
    return [
        ("run_id", lambda r: r.id), ("experiment_id", lambda r: r.report.record.experiment_id),
        ("step", _planned("step")), ("step_name", _planned("step_name")), ("clients", _planned("clients")),
        ("repeat", _planned("repeat")), ("status", lambda r: r.report.record.status.value),
        ("started_at", lambda r: r.report.record.started_at), ("finished_at", lambda r: r.report.record.finished_at),
        ("engine", lambda r: r.report.record.spec.engine),
        ("engine_version", lambda r: r.report.record.environment.get("engine", {}).get("version")),
        ("workload", lambda r: r.report.record.spec.workload),
        *((key, _setting(key)) for key in _union([list(r.record.spec.settings) for r in reports])),
        ("benchmark", lambda r: r.report.presentation.benchmark),
        ("terminals", lambda r: r.report.record.spec.terminals),
        ("warmup_s", lambda r: r.report.record.spec.warmup_s),
        ("duration_s", lambda r: r.report.record.spec.duration_s),
        ("seed", lambda r: r.report.record.spec.seed),
        ("knobs", lambda r: " ".join(f"{k}={v}" for k, v in r.report.record.spec.knobs.items())),
        ("load_s", lambda r: r.report.record.load_seconds), ("loaded_in_run", lambda r: r.report.record.loaded_in_run),
        *((key, _headline(key)) for key in headlines),
        ("tpm", lambda r: r.report.figures.tpm),
        *((name, (lambda n: lambda r: r.report.figures.outcomes.get(n))(name))
          for name in ("committed", "rolled_back", "retried", "failed")),
        *_latency_columns(transactions),
        *((name, _band("validity", name)) for name in _union([[b.name for b in r.validity] for r in reports])),
        ("out_of_band", lambda r: " ".join(b.name for b in (*r.report.validity, *r.report.mix)
                                           if b.status == "OUT OF BAND")),
        *((name.removesuffix("_percent") + "_pct", _band("mix", name))
          for name in _union([[b.name for b in r.mix] for r in reports])),
        *_MONITORING, *_DEVICE,
        ("consistency_passed", _consistency(True)), ("consistency_failed", _consistency(False)),
        ("consistency_skipped", _consistency(None)),
        ("warnings", lambda r: " | ".join(r.report.warnings)),
        ("errors", lambda r: " | ".join(r.report.record.errors)),
        # added after the columns of older exports, which keep their places: a fixed-rate run's schedule and service
        # times, then its rate in a rate sweep's plan (empty outside one)
        *_RATE, *_service_columns(transactions), ("rate", _planned("rate")),
    ]


def runs_table(runs: Sequence[RunData]) -> tuple[list[str], list[list[Any]]]:
    """One row per run with its configuration and figures (``run_columns``)."""
    columns = run_columns(runs)
    return [name for name, _ in columns], [[get(run) for _, get in columns] for run in runs]


def _estimate_cells(name: str, value: Estimate, scale: float = 1.0) -> dict[str, Any]:
    return {f"{name}_mean": value.mean * scale, f"{name}_low": value.low * scale, f"{name}_high": value.high * scale}


def _ratio_cells(name: str, ratio: Ratio | None) -> dict[str, Any]:
    if ratio is None:
        return {f"{name}_{part}": None for part in ("ratio", "low", "high", "verdict", "repeats_needed")}
    return {f"{name}_ratio": ratio.ratio, f"{name}_low": ratio.low, f"{name}_high": ratio.high,
            f"{name}_verdict": ratio.verdict.value, f"{name}_repeats_needed": ratio.repeats_needed}


def cells_table(data: ExperimentData) -> tuple[list[str], list[list[Any]]]:
    """One row per cell (a step at a client count, and in a rate sweep a rate): estimates over repeats (mean and 95 %
    CI) and ratios with verdicts. The ``rate`` comes last, after the columns older exports had, empty outside a rate
    sweep."""
    rows = []
    headline = data.report.presentation.headline
    for c in data.report.summary.cells:
        row = {"step": c.step, "step_name": data.report.summary.step_names[c.step], "clients": c.clients,
               "repeats": c.headline.n, "failed": c.failed, **_estimate_cells(headline.key, c.headline),
               **_estimate_cells(headline.committed_key, c.committed),
               **_estimate_cells("tps", data.tps[c.step, c.level]),
               **_estimate_cells(f"p90_{headline.transaction}_ms", c.p90_headline_s, 1000),
               **_estimate_cells("load_s", c.load_s),
               **_ratio_cells("vs_previous", c.vs_previous), **_ratio_cells("vs_baseline", c.vs_baseline),
               **_ratio_cells("load_vs_baseline", c.load_vs_baseline),
               **_durability_cells(data.report.summary.step_durability(c.step)),
               **_device_cells(data.device.get((c.step, c.level))),
               "run_ids": " ".join(map(str, c.run_ids)), "rate": c.rate}
        rows.append(row)
    header = list(rows[0]) if rows else ["step"]
    return header, [[row[name] for name in header] for row in rows]


def _durability_cells(found: Durability | None) -> dict[str, Any]:
    """The step's durability class and worst verdict; empty cells when it was not crash-tested."""
    return {"durability": _durability_class(found), "durability_worst": found.worst.value if found else None}


def _device_cells(cell: DeviceCell | None) -> dict[str, Any]:
    """The cell against its device: both rates and the ratio as means over the repeats, in ``device_unit``; empty
    cells when fio measured none of its runs."""
    if cell is None:
        return {name: None for name in ("device_unit", "database_rate", "fio_rate", "fio_ratio", "fio_ratio_low",
                                        "fio_ratio_high", "device_verdict")}
    return {"device_unit": cell.unit, "database_rate": cell.database.mean, "fio_rate": cell.device.mean,
            "fio_ratio": cell.ratio.mean, "fio_ratio_low": cell.ratio.low, "fio_ratio_high": cell.ratio.high,
            "device_verdict": cell.verdict}


RESULT_FILE_COLUMNS = ["run_id", "terminal", "queued_s", "completed_s", "outcome", "w_id", "carrier_id",
                       *(f"d{district}" for district in range(1, 11))]


def result_file_table(runs: Sequence[RunData]) -> tuple[list[str], list[list[Any]]]:
    """The Delivery result file of 2.7.2.3, one row per Delivery: when it was queued and completed (seconds from
    the run's time origin), its outcome, the warehouse and carrier, and each district's order delivered, or
    ``skipped`` where the district had none (2.7.4.2); a Delivery that failed delivered nothing."""
    rows = []
    for run in runs:
        for result in run.report.deferred:
            record = result.record or {}
            orders = ["skipped" if order is None else order for order in record.get("delivered", [""] * 10)]
            rows.append([run.id, result.terminal, result.queued, result.completed, result.outcome.value,
                         record.get("w_id"), record.get("carrier_id"), *orders])
    return RESULT_FILE_COLUMNS, rows


SAMPLE_COLUMNS = ["run_id", "terminal", "transaction", "start_s", "latency_s", "outcome", "attempts", "error",
                  "intended_s"]
SAMPLES_A_SLICE = 65_536  # of a run's samples made CSV rows at a time: a long run's would not fit as Python rows


def write_samples(out: TextIO, runs: Iterable[tuple[int, Samples]]) -> None:
    """The raw samples every figure is computed from, a row per business transaction, each run's in the order of
    their starts: its terminal, transaction, start and latency (seconds, the start from the run's time origin), outcome,
    attempts, error text, and in a fixed-rate run its intended start (else empty). Written a slice at a time."""
    # every text quoted: an error text is the database's own, and a carriage return alone in it would otherwise end
    # the row (the csv module quotes only what the line terminator holds)
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(SAMPLE_COLUMNS)
    outcomes = np.array([outcome.value for outcome in OUTCOMES], dtype=object)
    for run_id, samples in runs:
        names = np.array(samples.names or ("",), dtype=object)
        errors = samples.error if samples.error is not None else np.full(len(samples), "", dtype=object)
        for first in range(0, len(samples), SAMPLES_A_SLICE):
            part = slice(first, first + SAMPLES_A_SLICE)
            intended = samples.intended[part].astype(object)
            intended[np.isnan(samples.intended[part])] = ""  # a closed-loop run's: no intended start
            writer.writerows(zip(itertools.repeat(run_id), samples.terminal[part].tolist(),
                                 names[samples.transaction[part]].tolist(), samples.start[part].tolist(),
                                 samples.latency[part].tolist(), outcomes[samples.outcome[part]].tolist(),
                                 samples.attempts[part].tolist(), errors[part].tolist(), intended.tolist()))


SERIES_COLUMNS = ["run_id", "time_s", "source", "name", "labels", "value", "unit"]


def series_table(runs: Sequence[RunData]) -> tuple[list[str], list[list[Any]]]:
    """The raw time series, long form: per second of each run the headline transaction's completions (TPC-C:
    ``new_orders_completed``) and all business transactions completed (source ``driver``), a fixed-rate run's backlog
    and late starts (source ``schedule``), then every stored monitoring sample as read (counters cumulative)."""
    rows: list[list[Any]] = []
    for run in runs:
        timeline = f"{per_second_key(run.report.presentation.headline)}_completed"
        for second, headline, transactions in run.report.figures.per_second:
            rows.append([run.id, float(second), "driver", timeline, "{}", headline, "count"])
            rows.append([run.id, float(second), "driver", "transactions_completed", "{}", transactions, "count"])
        rows += _schedule_series(run)
        rows += [[run.id, m.time, m.source, m.name, m.labels_text(), m.value, m.unit] for m in run.metrics]
    return SERIES_COLUMNS, rows


def _schedule_series(run: RunData) -> list[list[Any]]:
    """A fixed-rate run's (source ``schedule``): ``backlog``, the transactions due and not started at ``time_s``, and
    ``late_starts``, the starts in the second from ``time_s`` later than intended; none for a closed-loop run."""
    rate = run.report.rate
    if rate is None:
        return []
    return [[run.id, float(second), "schedule", name, "{}", count, "count"]
            for name, series in (("backlog", rate.backlog), ("late_starts", rate.late)) for second, count in series]


CRASH_TEST_COLUMNS = ["test_id", "at", "experiment_id", "plan_key", "engine", "knobs", "workload", "terminals", "mode",
                      "seed", "verdict", "acknowledged", "rolled_back", "lost", "recovery_s", "crashed_at_s", "window",
                      "failed_checks", "notes"]


def crash_tests_table(records: Sequence[CrashTestRecord]) -> tuple[list[str], list[list[Any]]]:
    """One row per crash test: its configuration, mode and seed, verdict, the acknowledged commits and how many were
    lost, recovery (empty: the engine did not come back), when it crashed, the documented window, and the clauses of
    the checks that failed."""
    rows = []
    for record in records:
        test = record.test
        rows.append([record.id, record.at, test.experiment_id, test.plan_key, test.engine,
                     " ".join(f"{k}={v}" for k, v in test.knobs.items()), test.workload, test.terminals,
                     test.mode.value, test.seed, test.verdict.value, test.findings.acknowledged,
                     test.findings.rolled_back, len(test.findings.lost), test.recovery_s, test.crashed_at_s,
                     test.window, " ".join(check.clause for check in failed_checks(record)), " | ".join(test.notes)])
    return CRASH_TEST_COLUMNS, rows


def crash_tests_text(records: Sequence[CrashTestRecord], output_format: str = "json") -> str:
    """Crash tests as a JSON document (each whole, as stored) or as the CSV table of ``crash_tests_table``."""
    if output_format == "csv":
        return to_csv(*crash_tests_table(records))
    return to_json({"kind": "crash_tests", "schema": SCHEMA, "crash_tests": [plain(record) for record in records]})


def to_csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([_csv_value(v) for v in row] for row in rows)
    return out.getvalue()


def _csv_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return ""
    return value


def document_text(data: ExperimentData | RunData) -> str:
    """The JSON document of a run or of an experiment: every figure and the raw series."""
    return to_json(run_document(data) if isinstance(data, RunData) else experiment_document(data))


def table_text(data: ExperimentData | RunData, table: str = "runs") -> str:
    """One CSV table of a run or of an experiment: ``runs`` (a row per run), ``series`` (the raw time series),
    ``result_file`` (Delivery's, 2.7.2.3) or ``cells`` (a row per step and load level: an experiment's)."""
    if table == "cells":
        if isinstance(data, RunData):
            raise ValueError("a single run has no cells: no steps, no repeats")
        return to_csv(*cells_table(data))
    runs = [data] if isinstance(data, RunData) else list(data.runs)
    tables = {"runs": runs_table, "series": series_table, "result_file": result_file_table}
    return to_csv(*tables[table](runs))
