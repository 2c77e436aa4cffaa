"""Monitoring during real SQLite runs: plausible values, stored with the run, faults that stay warnings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maximus import api, runs
from maximus.analysis.crosschecks import cross_checks
from maximus.analysis.monitoring import monitoring_figures
from maximus.cli.app import app
from maximus.driver.scheduler import DriveSpec, drive
from maximus.records import RunStatus, Window
from maximus.samplers.base import Reading, Sampler, SamplingContext
from maximus.samplers.monitor import Monitor
from maximus.workloads import workload
from maximus.workloads.tpcc import Tpcc
from maximus.workloads.tpcc.emulator import TpccRunSettings
from maximus.workloads.tpcc.random import NURandConstants

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})

pytestmark = pytest.mark.skipif(not Path("/proc/diskstats").exists(), reason="the OS sampler needs Linux")


def _run(workdir: Path, results: Path, **overrides) -> api.RunOutcome:
    settings = {"terminals": 3, "warmup_s": 1.0, "duration_s": 4.0, "check": False, **overrides}
    return api.run_benchmark(api.BenchmarkOptions(workdir=workdir, results=results, **settings))


def test_a_monitored_run_stores_plausible_os_and_sqlite_figures(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    outcome = _run(workdir, results)  # default knobs: rollback journal, synchronous=full: every commit is fsynced
    report = api.report_of_run(results, outcome.run_id)
    figures, checks = report.monitoring.figures, {c.name: c for c in report.monitoring.checks}
    assert outcome.status is RunStatus.COMPLETE
    assert set(figures.sources) == {"os", "sqlite", "monitor"}
    cpu = figures.cpu
    assert cpu.user + cpu.system + cpu.iowait + cpu.idle + cpu.steal == pytest.approx(100, abs=0.5)
    assert cpu.busy_cpus > 0.05 and figures.tps_per_cpu_second > 0
    client = figures.groups["client"]
    assert client.processes == 3 and client.cpus > 0.05  # 3 terminals, doing SQLite's work (their Deliveries too)
    assert report.monitoring.embedded and figures.client_bound is None
    assert figures.disk.writes_per_s > 10 and figures.disk.written_mb_per_s > 0  # fsynced commits reach the disk
    assert figures.log_sync_wait_ms is None and figures.buffer_hit_ratio is None  # SQLite does not expose them
    commits = [s for s in figures.engine if s.name == "commits_total"]
    assert commits and commits[0].per_second > 10
    assert checks["commits"].passed and checks["commits"].database == checks["commits"].reference > 100
    assert checks["reads"].passed and checks["writes"].passed
    assert not [w for w in report.warnings if "monitoring" in w or "cross-check" in w]

    shown = CliRunner().invoke(app, ["show", str(outcome.run_id), "--results", str(results)])
    assert shown.exit_code == 0, shown.output
    table = shown.output.split("Run table", 1)[1]
    for row in ("tpmC", "CPU user %", "CPU iowait %", "Reads/s", "I/O rate MB/s", "TPS per CPU-second",
                "Deferred-Delivery p90 / avg / max ms", "Cross-check commits: ok", "embedded engine"):
        assert row in table, row
    assert "Log sync wait ms" in table and table.split("Log sync wait ms", 1)[1].split("│")[1].strip() == "-"


class Skewed(Sampler):
    """The engine's sampler with a commit counter that counts double: an injected mismatch."""

    def __init__(self, inner: Sampler) -> None:
        self.inner, self.source = inner, inner.source

    def open(self, context: SamplingContext) -> list[str]:
        return self.inner.open(context)

    def read(self) -> list[Reading]:
        return [r._replace(value=2 * r.value) if r.name == "commits_total" else r for r in self.inner.read()]

    def close(self) -> None:
        self.inner.close()


class Broken(Sampler):
    source = "broken"

    def read(self) -> list[Reading]:
        raise RuntimeError("sensor on fire")


def test_an_injected_mismatch_and_a_raising_sampler_are_warnings_of_a_complete_run(
        workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = runs.run_samplers
    monkeypatch.setattr(runs, "run_samplers", lambda engine: [*real(engine)[:-1], Skewed(real(engine)[-1]), Broken()])
    results = tmp_path / "results.db"
    outcome = _run(workdir, results)
    report = api.report_of_run(results, outcome.run_id)
    record = report.record
    assert outcome.status is RunStatus.COMPLETE and outcome.result.samples
    broken = [w for w in record.warnings if "sampler 'broken' failed" in w]  # the monitor's own note, stored
    assert broken and "RuntimeError: sensor on fire" in broken[0]
    assert not [w for w in record.warnings if w.startswith("cross-check")]  # a verdict: the read side's
    (mismatch,) = [w for w in report.warnings if w.startswith("cross-check of commits failed")]
    driver = int(mismatch.split("the driver counted ")[1].split(" ")[0].replace(",", ""))
    database = int(mismatch.split("file_change_counter) ")[1].split(" ")[0].replace(",", ""))
    assert database == 2 * driver > 0


def test_without_monitoring_nothing_is_sampled_and_show_says_so(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    outcome = _run(workdir, results, monitor=False, duration_s=2.0)
    report = api.report_of_run(results, outcome.run_id)
    assert not report.monitoring.figures.monitored and report.monitoring.checks == ()
    shown = CliRunner().invoke(app, ["show", str(outcome.run_id), "--results", str(results)])
    assert "Monitoring: none stored for this run" in shown.output
    assert shown.output.split("CPU user %", 1)[1].split("│")[1].strip() == "-"


def test_a_run_on_a_cold_cache_reads_from_the_data_device(workdir: Path) -> None:
    engine = api.make_engine("sqlite", workdir, ONE_WAREHOUSE, {})
    engine.restore()
    descriptor = os.open(engine.path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)  # evict the database from the page cache
    finally:
        os.close(descriptor)
    window = Window(0.5, 3.5)
    monitor = Monitor(runs.run_samplers(engine), window)
    result = drive(DriveSpec(engine, Tpcc(), TpccRunSettings(1, 1, NURandConstants.for_run(0, 1)), 2, 0.5, 3.0),
                   monitor=monitor)
    figures = monitoring_figures(monitor.samples, window, 1.0)
    assert result.status is RunStatus.COMPLETE and monitor.warnings == []
    assert figures.disk.reads_per_s > 1 and figures.disk.read_mb_per_s > 0.1
    assert figures.disk.read_wait_ms is not None and figures.disk.read_wait_ms > 0
    checks = {c.name: c for c in cross_checks(monitor.samples, result.samples, window,
                                              workload("tpcc").write_transactions(), embedded=True)}
    assert checks["reads"].passed and checks["reads"].database > 100_000  # the terminals' reads, on the device
    assert checks["commits"].passed
