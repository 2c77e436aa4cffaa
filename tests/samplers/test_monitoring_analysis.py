"""Derived figures and cross-checks computed from known samples (pure functions, no run)."""

from __future__ import annotations

import pytest

from maximus.analysis.metrics import run_figures
from maximus.analysis.crosschecks import Tolerance, cross_checks
from maximus.analysis.monitoring import CpuFigures, GroupFigures, RunColumn, client_bound, monitoring_figures
from maximus.analysis.series import change, series_of
from maximus.records import Outcome, TxnSample, Window
from maximus.report.console import run_table_rows
from maximus.records import MetricSample
from maximus.workloads.tpcc import Tpcc

WINDOW = Window(1.0, 11.0)  # ten seconds
WRITERS = {"new_order", "payment", "deferred_delivery"}


def _series(name: str, at_start: float, at_end: float, source: str = "os", unit: str = "", **labels: str
            ) -> list[MetricSample]:
    """Readings before, at the edges of (with jitter) and after the window: only the edges may count."""
    return [MetricSample(t, source, name, v, unit, labels)
            for t, v in ((-0.05, at_start - 99), (1.02, at_start), (6.0, (at_start + at_end) / 2),
                         (11.01, at_end), (12.5, at_end + 99))]


def _cpu() -> list[MetricSample]:
    moved = {"user": 6, "nice": 2, "system": 3, "irq": 0.5, "softirq": 0.5, "iowait": 2, "idle": 5.5, "steal": 0.5}
    return [s for mode, seconds in moved.items() for s in _series("cpu_seconds_total", 100, 100 + seconds, "os", "s",
                                                                  mode=mode)]


def _disk(**labels: str) -> list[MetricSample]:
    return [*_series("disk_reads_total", 1000, 1500, **labels), *_series("disk_read_seconds_total", 10, 11, **labels),
            *_series("disk_writes_total", 0, 2000, **labels), *_series("disk_write_seconds_total", 3, 7, **labels),
            *_series("disk_read_bytes_total", 0, 5e6, **labels),
            *_series("disk_written_bytes_total", 0, 20e6, **labels),
            *_series("disk_busy_seconds_total", 50, 55, **labels)]


def test_cpu_shares_and_transactions_per_cpu_second() -> None:
    figures = monitoring_figures(_cpu(), WINDOW, transactions_per_s=120)
    cpu = figures.cpu
    assert (cpu.user, cpu.system, cpu.iowait, cpu.idle, cpu.steal) == pytest.approx((40, 20, 10, 27.5, 2.5))
    assert cpu.busy_cpus == pytest.approx(12 / 9.99, rel=1e-3)  # 12 CPU-seconds between the edge readings
    assert figures.tps_per_cpu_second == pytest.approx(120 / cpu.busy_cpus)


def test_data_device_rates_and_average_waits() -> None:
    figures = monitoring_figures([*_disk(device="vda", role="data"), *_disk(device="vdb")], WINDOW, 0)
    disk = figures.disk
    seconds = 11.01 - 1.02
    assert disk.device == "vda"
    assert disk.reads_per_s == pytest.approx(500 / seconds) and disk.writes_per_s == pytest.approx(2000 / seconds)
    assert disk.read_wait_ms == pytest.approx(2.0) and disk.write_wait_ms == pytest.approx(2.0)
    assert disk.io_mb_per_s == pytest.approx(25 / seconds)
    assert disk.busy_percent == pytest.approx(500 / seconds)


def test_a_counter_that_goes_backwards_gives_no_figure_rather_than_a_wrong_one() -> None:
    samples = [MetricSample(1.0, "os", "disk_reads_total", 10), MetricSample(11.0, "os", "disk_reads_total", 3)]
    assert change(series_of(samples)[0], WINDOW) is None


def test_without_samples_nothing_is_measured_and_absent_figures_are_none() -> None:
    assert monitoring_figures([], WINDOW, 100).monitored is False
    figures = monitoring_figures(_cpu(), WINDOW, 100)  # CPU only: no disk, no waits, no buffer counters
    assert figures.monitored and figures.disk is None
    assert figures.log_sync_wait_ms is None and figures.data_read_wait_ms is None
    assert figures.buffer_hit_ratio is None and figures.waits == ()


def test_wait_events_by_role_top_five_and_buffer_hit_ratio() -> None:
    samples = [*_series("wait_seconds_total", 0, 2, "db", "s", event="WALSync", role="log_sync"),
               *_series("waits_total", 0, 1000, "db", event="WALSync"),
               *_series("wait_seconds_total", 0, 1, "db", "s", event="DataFileRead", role="data_read"),
               *_series("waits_total", 0, 250, "db", event="DataFileRead"),
               *_series("buffer_hits_total", 0, 990, "db"), *_series("buffer_misses_total", 0, 10, "db")]
    for i in range(6):
        samples += [*_series("wait_seconds_total", 0, 0.1 * i, "db", "s", event=f"Other{i}"),
                    *_series("waits_total", 0, 10, "db", event=f"Other{i}")]
    figures = monitoring_figures(samples, WINDOW, 0)
    assert figures.log_sync_wait_ms == pytest.approx(2.0)
    assert figures.data_read_wait_ms == pytest.approx(4.0)
    assert [w.event for w in figures.waits] == ["WALSync", "DataFileRead", "Other5", "Other4", "Other3"]
    assert figures.buffer_hit_ratio == pytest.approx(0.99)


def test_process_group_cpu_and_processes() -> None:
    samples = [*_series("process_cpu_seconds_total", 0, 8, group="client", mode="user"),
               *_series("process_cpu_seconds_total", 0, 2, group="client", mode="system"),
               *_series("processes", 3, 3, group="client")]
    figures = monitoring_figures(samples, WINDOW, 0)
    client = figures.groups["client"]
    assert client.cpus == pytest.approx(10 / 9.99, rel=1e-3) and client.processes == 3
    assert set(figures.groups) == {"client"} and figures.client_bound is None  # no server: never client-bound


def _cpu_idle(idle: float) -> CpuFigures:
    return CpuFigures(100 - idle, 0, 0, idle, 0, 2.0)


def test_client_bound_only_with_a_server_and_when_the_client_is_the_limit() -> None:
    busy_clients = {"server": GroupFigures("server", 1.0, 0, 8), "client": GroupFigures("client", 3.2, 0.4, 4)}
    assert "each busy 90%" in client_bound(busy_clients, _cpu_idle(50))
    saturated = {"server": GroupFigures("server", 0.8, 0, 8), "client": GroupFigures("client", 1.0, 0.2, 4),
                 "driver": GroupFigures("driver", 0.1, 0, 1)}
    assert "saturated (idle 5 %)" in client_bound(saturated, _cpu_idle(5))
    assert client_bound(saturated, _cpu_idle(30)) is None
    assert client_bound({"client": GroupFigures("client", 3.9, 0, 4)}, _cpu_idle(0)) is None  # embedded


def _transactions() -> list[TxnSample]:
    done = Outcome.COMMITTED
    names = ["new_order"] * 5 + ["payment"] * 3 + ["order_status"] * 2 + ["delivery", "deferred_delivery"]
    samples = [TxnSample(0, name, 0.1 * i, 0.01, done) for i, name in enumerate(names)]
    return samples + [TxnSample(1, "new_order", 2.0, 0.01, Outcome.ROLLED_BACK),
                      TxnSample(1, "payment", 3.0, 0.01, Outcome.FAILED, 5, "busy")]


def _commits(first_at: float, count: float) -> list[MetricSample]:
    return [MetricSample(first_at, "db", "commits_total", 0, "count", {"counts": "writes", "from": "own"}),
            MetricSample(13.0, "db", "commits_total", count, "count", {"counts": "writes", "from": "own"})]


def test_commit_cross_check_counts_committed_writes_and_flags_a_mismatch_with_both_numbers() -> None:
    (match,) = cross_checks(_commits(-0.05, 9), _transactions(), WINDOW, WRITERS, embedded=True)  # 5 + 3 + 1
    assert match.passed and match.name == "commits"
    (within,) = cross_checks(_commits(-0.05, 11), _transactions(), WINDOW, WRITERS, embedded=True)
    assert within.passed  # 2 is the absolute tolerance
    (mismatch,) = cross_checks(_commits(-0.05, 20), _transactions(), WINDOW, WRITERS, embedded=True)
    assert not mismatch.passed and (mismatch.database, mismatch.reference) == (20, 9)
    assert "9 committed write transactions" in mismatch.warning() and "own) 20" in mismatch.warning()


def test_commit_cross_check_needs_a_counter_that_saw_the_whole_run() -> None:
    late = _commits(0.5, 9)  # first reading after the first transaction started
    assert cross_checks(late, _transactions(), WINDOW, WRITERS, embedded=True) == []


def test_read_cross_check_flags_database_reads_the_device_did_not_serve() -> None:
    def check(device_mb: float, embedded: bool = True) -> bool:
        samples = [*_series("process_read_bytes_total", 0, 50e6, group="client"),
                   *_series("process_read_bytes_total", 0, 1e6, group="server"),
                   *_series("disk_read_bytes_total", 0, device_mb * 1e6, device="vda", role="data")]
        (result,) = cross_checks(samples, [], WINDOW, WRITERS, embedded)
        return result.passed

    assert check(49) and check(500)  # a device may serve others too
    assert not check(10)
    assert check(10, embedded=False)  # a server engine's reads are its server processes' (1 MB), not the clients'


def test_write_cross_check_flags_file_growth_that_neither_reached_the_device_nor_stays_dirty() -> None:
    def check(device_mb: float, dirty_mb: float) -> bool:
        samples = [*_series("file_bytes", 100e6, 130e6, "db", "bytes", file="db"),
                   *_series("file_bytes", 0, 0, "db", "bytes", file="log"),
                   *_series("disk_written_bytes_total", 0, device_mb * 1e6, device="vda", role="data"),
                   *_series("memory_bytes", 1e6, 1e6 + dirty_mb * 1e6, kind="dirty"),
                   *_series("memory_bytes", 0, 0, kind="writeback")]
        (result,) = cross_checks(samples, [], WINDOW, WRITERS, True, Tolerance(io_relative=0.0))
        return result.passed

    assert check(31, 0) and check(5, 26)
    assert not check(5, 0)


def test_run_table_has_the_seeds_rows_and_marks_what_was_not_measured() -> None:
    transactions = [TxnSample(0, "new_order", 2.0 + i / 10, 0.010, Outcome.COMMITTED) for i in range(30)]
    figures = run_figures(transactions, WINDOW, ["new_order", "deferred_delivery"], "new_order")
    monitoring = monitoring_figures([*_cpu(), *_disk(device="vda", role="data")], WINDOW, 3.0)
    shown = Tpcc().presentation(Tpcc().settings({}))
    rows = dict(run_table_rows([RunColumn("1", figures, monitoring), RunColumn("4", figures, monitoring)], shown))
    assert rows["tpmC"] == ["180", "180"]
    assert rows["CPU user %"] == ["40.0", "40.0"] and rows["CPU idle %"] == ["27.5", "27.5"]
    assert rows["Log sync wait ms"] == ["-", "-"] and rows["Data-file read wait ms"] == ["-", "-"]
    assert rows["Device read wait ms"] == ["2.00", "2.00"]
    assert rows["New-Order p90 / avg / max ms"] == ["10.0 / 10.0 / 10.0"] * 2
    assert rows["Deferred-Delivery p90 / avg / max ms"] == ["- / - / -"] * 2
