"""One stored run analysed: every figure ``show``, the report and the exports give of it, recomputed from its
raw samples in the results store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from maximus.analysis import monitoring
from maximus.analysis.device import DeviceComparison, compare_with_device
from maximus.analysis.hosts import host_warnings
from maximus.analysis.metrics import RunFigures, run_figures
from maximus.analysis.monitoring import RunColumn, RunMonitoring
from maximus.analysis.rate import RateFigures, rate_figures
from maximus.bands import Counters, band_results
from maximus.client_hosts import client_hosts
from maximus.errors import UserError
from maximus.records import (EMBEDDED, BandResult, CheckResult, DeferredResult, Presentation, RunRecord, TxnSample,
                             WorkloadReading)
from maximus.samples import Samples
from maximus.store import ResultsStore


@dataclass(frozen=True)
class RunReport:
    """Everything `show` prints about a run, recomputed from the stored raw samples."""

    record: RunRecord
    presentation: Presentation  # how the run's workload names its figures: ``figures.headline`` is its headline
    figures: RunFigures
    validity: tuple[BandResult, ...]
    mix: tuple[BandResult, ...]
    consistency: tuple[CheckResult, ...]
    monitoring: RunMonitoring
    deferred: tuple[DeferredResult, ...] = ()  # the deferred transactions' result file (TPC-C 2.7.2.3)
    device: DeviceComparison | None = None  # a storage-bound run against fio's matching job (issue #43)
    rate: RateFigures | None = None  # a fixed-rate run against its schedule (issue #45)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the run stored (durability, the workload's conditions, the monitor's own notes), then each failed
        cross-check with both of its numbers and a client-bound verdict, recomputed from the stored samples. A run
        stored before these were recomputed stored them itself: each is said once."""
        stored = self.record.warnings
        derived = [check.warning() for check in self.monitoring.checks if not check.passed]
        if self.device is not None and self.device.verdict == "cache-bound":  # a storage-bound run that was not
            derived.append(f"cache leak: {self.device.reason}")
        if self.rate is not None and not self.rate.sustained:
            derived.append(self.rate.verdict)
        # a run from several client hosts
        derived.extend(host_warnings(client_hosts(self.record.environment), self.monitoring.figures.hosts_cpu))
        bound = self.monitoring.figures.client_bound
        return (*stored, *(text for text in [*derived, *([bound] if bound else [])] if text not in stored))


def analyse_run(store: ResultsStore, run_id: int) -> RunReport:
    record = store.run(run_id)
    reading = reading_of(record)
    samples = store.sample_columns(run_id)
    figures = run_figures(samples, record.window, reading.reported_transactions, reading.headline.transaction,
                          reading.headline.per_seconds, store.latency_histograms(run_id))
    deferred, facts = tuple(store.deferred_results(run_id)), store.facts(run_id)
    counters = Counters(figures.counts, facts, deferred, record.window)
    monitored = analyse_monitoring(store, record, samples, figures)
    limit = store.device_limit(run_id)
    device = compare_with_device(limit, figures, reading.headline, monitored.figures.disk,
                                 monitored.figures.data_reads_per_s) if limit else None
    return RunReport(record, reading.presentation, figures, tuple(band_results(reading.validity, counters)),
                     tuple(band_results(reading.mix, counters)), tuple(store.consistency(run_id)), monitored, deferred,
                     device, rate_figures(record.spec, samples, record.window, facts))


def reading_of(record: RunRecord) -> WorkloadReading:
    """How to read the run, as it was stored with it; a run stored before Maximus kept that gets it when the results
    database is opened (``api.open_results``), where its workload is known."""
    if record.reading is None:
        raise UserError(f"run {record.id} was stored by an older Maximus, which did not keep how to read it, and "
                        f"this Maximus does not know its workload {record.spec.workload!r}")
    return record.reading


def listed_runs(store: ResultsStore) -> list[tuple[RunRecord, Presentation, int]]:
    """Every stored run, how its workload names it, and its headline figure (``RunFigures.headline``), counted by
    the store in one query instead of analysing each run whole: ``maximus runs`` lists a thousand in a second."""
    done = store.completions_in_window()
    listed = []
    for record in store.runs():
        seconds, presentation = record.window.minutes * 60.0, reading_of(record).presentation
        headline = int(presentation.headline.rate(done.get(record.id, 0), seconds)) if seconds else 0
        listed.append((record, presentation, headline))
    return listed


def analyse_monitoring(store: ResultsStore, record: RunRecord, samples: Samples | Sequence[TxnSample],
                       figures: RunFigures) -> RunMonitoring:
    """The run's monitoring figures and cross-checks, recomputed from its stored samples."""
    writers = set(reading_of(record).write_transactions)
    return monitoring.analyse(store.metric_samples(record.id), samples, record.window, writers, figures.tpm / 60,
                              embedded(record))


def embedded(record: RunRecord) -> bool:
    """Whether the run's engine ran inside Maximus's client processes, as the run stored it; for a run stored before
    that, as its environment says (no server process was found)."""
    stored = record.spec.options.get(EMBEDDED)
    if stored is not None:
        return stored == "yes"
    return "server" not in record.environment.get("processes", {})


def run_column(report: RunReport) -> RunColumn:
    """One column of the run table of the file-system study (``report.console.render_run_table``), headed by
    its terminals."""
    return RunColumn(str(report.record.spec.terminals), report.figures, report.monitoring.figures)
