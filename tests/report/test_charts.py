"""The data behind each chart, from known figures: what a chart says is checked without drawing it."""

from __future__ import annotations

import math

import pytest

from maximus.analysis.compare import compare, estimate
from maximus.analysis.experiment import RunRow, summarise
from maximus.analysis.metrics import RunFigures, run_figures
from maximus.analysis.timeseries import cpu_timeline, disk_timeline
from maximus.experiment.plan import Level
from maximus.records import Outcome, RunStatus, TxnSample, Window
from maximus.report import charts
from maximus.records import MetricSample
from maximus.workloads.tpcc import Tpcc

MINUTE = Window(0.0, 60.0)  # one minute: tpmC is the count of New-Orders
SHOWN = Tpcc().presentation(Tpcc().settings({}))


def _figures(new_orders: int, latency: float = 0.010, deferred: int = 0) -> RunFigures:
    samples = [TxnSample(0, "new_order", 0.5 + i * 50 / new_orders, latency, Outcome.COMMITTED)
               for i in range(new_orders)]
    samples += [TxnSample(0, "deferred_delivery", 1.0 + i, 0.2, Outcome.COMMITTED) for i in range(deferred)]
    return run_figures(samples, MINUTE, Tpcc.reported_transactions, Tpcc.headline.transaction)


TPMC = {(0, 1): [100, 110], (0, 2): [150, 165], (1, 1): [200, 220], (1, 2): [300]}
LATENCY = {0: 0.020, 1: 0.010}


@pytest.fixture(scope="module")
def summary():
    rows, run_id = [], 0
    for (step, clients), values in TPMC.items():
        for value in values:
            run_id += 1
            rows.append(RunRow(run_id, step, clients, RunStatus.COMPLETE, 3.0 - step, True,
                               _figures(value, LATENCY[step])))
    return summarise(Tpcc.headline, ["baseline", "wal"], [Level(1), Level(2)], len(rows), rows)


def test_gain_chart_shows_each_steps_change_over_the_previous_step_with_its_interval(summary) -> None:
    chart = charts.gain_chart(summary, Level(1))
    assert chart.level == Level(1) and [bar.step for bar in chart.bars] == ["wal"]
    bar = chart.bars[0]
    expected = compare(TPMC[0, 1], TPMC[1, 1])
    assert bar.change_percent == pytest.approx(100.0)  # 200/100 and 220/110: twice as fast
    assert bar.low_percent == pytest.approx(100 * (expected.low - 1))
    assert bar.high_percent == pytest.approx(100 * (expected.high - 1))
    assert bar.low_percent < bar.change_percent < bar.high_percent
    assert bar.verdict == "faster" and bar.vs_baseline_percent == pytest.approx(100.0)


def test_gain_chart_defaults_to_the_largest_client_count_and_has_no_interval_without_repeats(summary) -> None:
    bar = charts.gain_chart(summary).bars[0]  # at 2 clients "wal" has one run: no interval, no verdict
    assert charts.gain_chart(summary).level == Level(2)
    assert bar.change_percent == pytest.approx(100 * (300 / math.sqrt(150 * 165) - 1))
    assert bar.low_percent is None and bar.high_percent is None and bar.verdict == "needs repeats"


def test_a_baseline_alone_has_no_gain_to_chart() -> None:
    rows = [RunRow(1, 0, 1, RunStatus.COMPLETE, 1.0, True, _figures(10))]
    chart = charts.gain_chart(summarise(Tpcc.headline, ["baseline"], [Level(1)], 1, rows))
    assert chart.bars == () and chart.note


def test_throughput_against_clients_has_one_line_per_configuration_with_its_confidence_band(summary) -> None:
    chart = charts.throughput_against_load(summary)
    assert [line.name for line in chart.lines] == ["baseline", "wal"]
    baseline, wal = chart.lines
    assert baseline.x == (1.0, 2.0) and baseline.y == (105.0, 157.5)
    band = estimate(TPMC[0, 1])
    assert baseline.low[0] == pytest.approx(band.low) and baseline.high[0] == pytest.approx(band.high)
    assert wal.y == (210.0, 300.0) and wal.low[1] is None and wal.high[1] is None  # one repeat: no band
    assert chart.floor == 0.0  # a two-repeat interval may reach below zero; throughput cannot
    assert chart.x_ticks == (1.0, 2.0)


def test_p90_against_throughput_pairs_each_cells_tpmc_with_its_new_order_p90_in_ms(summary) -> None:
    chart = charts.p90_against_throughput(summary, SHOWN)
    baseline, wal = chart.lines
    # each p90 as its histogram keeps it: to three significant digits (maximus.histograms)
    assert baseline.x == (105.0, 157.5) and baseline.y == pytest.approx((20.0, 20.0), rel=1e-3)
    assert wal.x == (210.0, 300.0) and wal.y == pytest.approx((10.0, 10.0), rel=1e-3)
    assert baseline.text == ("1 client", "2 clients")
    assert "5.6.2" in chart.title


# A rate sweep's tpmC per (step, clients, rate), its rates in the file's order (60 before 20): two repeats each
SWEPT = {(0, 1, 60.0): [700, 740], (0, 1, 20.0): [500, 520], (0, 2, 60.0): [1500, 1540], (0, 2, 20.0): [500, 520],
         (1, 1, 60.0): [1400, 1480], (1, 1, 20.0): [500, 520], (1, 2, 60.0): [1500, 1540], (1, 2, 20.0): [500, 520]}


@pytest.fixture(scope="module")
def swept():
    rows = [RunRow(run_id, step, clients, RunStatus.COMPLETE, 3.0, True, _figures(value, LATENCY[step]), rate)
            for run_id, (step, clients, rate, value) in enumerate(
                ((*key, value) for key, values in SWEPT.items() for value in values), start=1)]
    levels = [Level(clients, rate) for clients in (1, 2) for rate in (60.0, 20.0)]
    return summarise(Tpcc.headline, ["baseline", "wal"], levels, len(rows), rows)


def test_a_sweeps_throughput_is_drawn_against_the_rate_a_line_per_step_and_client_count(swept) -> None:
    chart = charts.throughput_against_load(swept)
    assert [line.name for line in chart.lines] == ["baseline · 1 client", "baseline · 2 clients", "wal · 1 client",
                                                   "wal · 2 clients"]
    assert all(line.x == (20.0, 60.0) for line in chart.lines) and chart.x_ticks == (20.0, 60.0)
    assert [line.y for line in chart.lines] == [(510.0, 720.0), (510.0, 1520.0), (510.0, 1440.0), (510.0, 1520.0)]
    assert "rate" in chart.x_title and "rate" in chart.title


def test_a_sweeps_p90_against_throughput_labels_each_point_with_its_rate(swept) -> None:
    chart = charts.p90_against_throughput(swept, SHOWN)
    baseline_one = chart.lines[0]
    assert baseline_one.name == "baseline · 1 client" and baseline_one.text == ("20/s", "60/s")
    assert baseline_one.x == (510.0, 720.0) and baseline_one.y == pytest.approx((20.0, 20.0), rel=1e-3)


def test_a_sweeps_gain_chart_is_at_the_highest_level_or_the_one_asked(swept) -> None:
    highest = charts.gain_chart(swept)
    assert highest.level == Level(2, 60.0) and "at 2 clients @ 60/s" in highest.title
    assert highest.bars[0].change_percent == pytest.approx(0.0)
    asked = charts.gain_chart(swept, Level(1, 60.0))
    assert asked.bars[0].change_percent == pytest.approx(100 * (math.sqrt(1400 * 1480) / math.sqrt(700 * 740) - 1))


def test_histogram_panel_has_at_least_20_bins_from_0_to_4_p90_with_average_p90_and_max_marked() -> None:
    latencies = [i / 1000 for i in range(1, 101)] + [1.0]  # 1..100 ms, and one of 1000 ms
    samples = [TxnSample(0, "payment", float(i % 50), lat, Outcome.COMMITTED) for i, lat in enumerate(latencies)]
    payment = next(t for t in run_figures(samples, MINUTE, ["payment"], "new_order").transactions)
    panel = charts.histogram_panel(payment, SHOWN.label(payment.name))
    assert panel.transaction == "Payment"
    assert len(panel.counts) >= 20 and len(panel.edges_ms) == len(panel.counts) + 1
    assert panel.edges_ms[0] == 0 and panel.edges_ms[-1] == pytest.approx(4 * panel.p90_ms)
    assert panel.p90_ms == pytest.approx(1000 * payment.latency.p90)
    assert sum(panel.counts) + panel.beyond == 101 and panel.beyond == 1
    assert panel.max_ms == pytest.approx(1000.0, rel=1e-3)  # three significant digits (maximus.histograms)
    assert panel.average_ms == pytest.approx(1000 * sum(latencies) / 101, rel=1e-3)


def test_response_histograms_cover_every_completed_transaction_including_deferred_delivery() -> None:
    chart = charts.response_histograms(_figures(30, deferred=5), "t", SHOWN)
    assert [p.transaction for p in chart.panels] == ["New-Order", "Deferred-Delivery"]
    empty = charts.response_histograms(_figures(0), "t", SHOWN)
    assert empty.panels == () and "no transaction" in empty.note


def test_throughput_over_time_is_new_orders_per_minute_each_second_with_window_and_checkpoints() -> None:
    samples = [TxnSample(0, "new_order", s + 0.1, 0.01, Outcome.COMMITTED) for s in range(10) for _ in range(s)]
    figures = run_figures(samples, Window(2.0, 8.0), ["new_order"], "new_order")
    chart = charts.throughput_over_time([("run 1", figures, (3.0, 6.0)), ("run 2", figures, None)], "t",
                                         Tpcc.headline)
    line = chart.lines[0]
    assert line.x == tuple(float(s) for s in range(10)) and line.y == tuple(60.0 * s for s in range(10))
    assert [(m.x, m.line) for m in chart.markers] == [(3.0, "run 1"), (6.0, "run 1")]
    assert [(s.start, s.end) for s in chart.spans] == [(2.0, 8.0)]
    assert "checkpoint" in chart.note
    none = charts.throughput_over_time([("run 2", figures, None)], "t", Tpcc.headline)
    assert none.markers == () and "not reported" in none.note


def _counter(name: str, values: list[float], **labels: str) -> list[MetricSample]:
    return [MetricSample(float(t), "os", name, v, "", labels) for t, v in enumerate(values)]


def _cpu_samples() -> list[MetricSample]:
    per_second = {"user": 0.5, "nice": 0.1, "system": 0.2, "irq": 0.0, "softirq": 0.1, "iowait": 0.4, "idle": 0.7,
                  "steal": 0.0}  # 2 CPUs: 2 CPU-seconds per second
    return [s for mode, rate in per_second.items() for s in _counter("cpu_seconds_total", [rate * t for t in range(4)],
                                                                     mode=mode)]


def test_cpu_over_time_stacks_user_system_iowait_idle_steal_to_100_percent() -> None:
    chart = charts.cpu_over_time(cpu_timeline(_cpu_samples()), Window(1.0, 3.0), "CPU")
    shares = {line.name: line.y for line in chart.lines}
    assert list(shares) == ["user", "system", "iowait", "idle", "steal"] and chart.stacked
    assert shares["user"] == pytest.approx((30.0,) * 3) and shares["system"] == pytest.approx((15.0,) * 3)
    assert shares["iowait"] == pytest.approx((20.0,) * 3) and shares["idle"] == pytest.approx((35.0,) * 3)
    assert chart.lines[0].x == (1.0, 2.0, 3.0)
    assert [sum(values) for values in zip(*shares.values())] == pytest.approx([100.0] * 3)


def test_io_over_time_has_operations_and_megabytes_per_second_of_the_data_device() -> None:
    samples = [*_counter("disk_reads_total", [0, 10, 30], device="vda", role="data"),
               *_counter("disk_writes_total", [0, 100, 100], device="vda", role="data"),
               *_counter("disk_read_bytes_total", [0, 1e6, 3e6], device="vda", role="data"),
               *_counter("disk_written_bytes_total", [0, 5e6, 5e6], device="vda", role="data")]
    chart = charts.io_over_time(disk_timeline(samples), Window(0.0, 2.0), "I/O")
    lines = {line.name: line for line in chart.lines}
    assert lines["reads/s"].y == (10.0, 20.0) and lines["writes/s"].y == (100.0, 0.0)
    assert lines["read MB/s"].y == (1.0, 2.0) and lines["read MB/s"].axis == "y2"
    assert "vda" in chart.title and chart.y2_title


def test_unmeasured_cpu_and_io_give_a_note_instead_of_a_chart() -> None:
    for chart in (charts.cpu_over_time(None, MINUTE, "CPU"), charts.io_over_time(None, MINUTE, "I/O")):
        assert chart.lines == () and "not measured" in chart.note
