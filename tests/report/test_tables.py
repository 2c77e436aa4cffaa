"""The data behind the report's tables: labels, warnings, the run table; from known runs."""

from __future__ import annotations


import pytest

from maximus import api
from maximus.analysis.metrics import run_figures
from maximus.analysis.monitoring import RunMonitoring, monitoring_figures
from maximus.experiment.plan import Level
from maximus.records import Outcome, RunRecord, RunSpec, RunStatus, TxnSample, Window
from maximus.report import tables
from maximus.analysis.bundle import RunData, gather_experiment, representative
from maximus.records import MetricSample
from maximus.workloads.tpcc import Tpcc
from maximus.workloads.tpcc.validity import mix_report, validity_report

WINDOW = Window(0.0, 60.0)
SHOWN = Tpcc().presentation(Tpcc().settings({}))


def _run(run_id: int, new_orders: int, knobs: dict | None = None, warnings: tuple[str, ...] = (),
         metrics: tuple[MetricSample, ...] = (), status: RunStatus = RunStatus.COMPLETE,
         keyed: bool = False) -> RunData:
    """A run of ``new_orders`` New-Orders of 10 ms in one measured minute, built without a database."""
    samples = [TxnSample(0, "new_order", 1 + i * 50 / new_orders, 0.01, Outcome.COMMITTED) for i in range(new_orders)]
    figures = run_figures(samples, WINDOW, Tpcc.reported_transactions, Tpcc.headline.transaction)
    spec = RunSpec("sqlite", knobs or {}, "tpcc", {"warehouses": 1, "keying": keyed, "mix": "deck"}, 2, 0.0, 60.0, 1)
    record = RunRecord(run_id, "2026-01-01T00:00:00+00:00", None, status, spec, knobs or {}, {}, 1.0, True, 1, {},
                       {"engine": {"name": "sqlite", "version": "3.40.1"}}, warnings, ("boom",) if status is
                       RunStatus.FAILED else (), WINDOW, 60.0)
    counts = dict(figures.counts)
    validity = validity_report(counts, {"new_order.order_lines": 10 * new_orders}, 1, [], WINDOW)
    monitoring = RunMonitoring(monitoring_figures(list(metrics), WINDOW, figures.tpm / 60), (), embedded=True)
    presentation = Tpcc().presentation(Tpcc().settings(spec.settings))
    report = api.RunReport(record, presentation, figures, validity, mix_report(counts), [], monitoring)
    return RunData(report, metrics)


def test_a_run_without_keying_and_think_times_is_tpc_c_like_never_tpc_c() -> None:
    tpcc = Tpcc()
    assert tpcc.presentation(tpcc.settings({"keying": False})).benchmark.startswith("TPC-C-like")
    assert tpcc.presentation(tpcc.settings({"keying": True})).benchmark == "TPC-C"
    assert tpcc.presentation(tpcc.settings({"keying": True, "warehouses": 2}), 20).benchmark == "TPC-C"
    crowded = tpcc.presentation(tpcc.settings({"keying": False, "warehouses": 2}), 21)
    assert crowded.benchmark == "TPC-C-like (keying and think times off; more than 10 terminals per warehouse)"
    assert "5.2.5" in crowded.conformance and "10.5 terminals per warehouse" in crowded.conformance
    assert tables.conformance([_run(1, 10)])[0].benchmark.startswith("TPC-C-like")
    assert tables.conformance([_run(1, 10, keyed=True)])[0].benchmark == "TPC-C"


def test_the_run_table_says_not_measured_where_a_run_has_no_monitoring() -> None:
    table = tables.run_table("t", [("1 client", _run(1, 60)), ("2 clients", None)], SHOWN)
    rows = {row.label: row.values for row in table.rows}
    assert table.columns == ("1 client", "2 clients")
    assert rows["tpmC"] == (60.0, None)
    for label in ("CPU user %", "CPU sys %", "CPU wait (iowait) %", "CPU idle %", "Physical reads/s",
                  "Physical writes/s", "I/O rate MB/s", "Log-sync wait ms", "Data-file read wait ms"):
        assert rows[label] == (None, None), label
    assert rows["New-Order p90 ms"][0] == pytest.approx(10.0, rel=1e-3)  # three significant digits (histograms)
    assert rows["Deferred-Delivery max ms"] == (None, None)  # none completed
    assert "not measured" in tables.unmeasured_note([_run(1, 60)])


def test_the_run_table_takes_cpu_from_the_monitoring_analysis() -> None:
    modes = {"user": 30, "nice": 0, "system": 10, "irq": 0, "softirq": 0, "iowait": 20, "idle": 40, "steal": 0}
    metrics = tuple(MetricSample(t, "os", "cpu_seconds_total", 100 + share * t / 100, "s", {"mode": m})
                    for m, share in modes.items() for t in (0.0, 60.0))
    rows = {row.label: row.values for row in tables.run_table("t", [("c", _run(1, 60, metrics=metrics))], SHOWN).rows}
    assert rows["CPU user %"] == pytest.approx((30.0,)) and rows["CPU wait (iowait) %"] == pytest.approx((20.0,))
    assert rows["Physical reads/s"] == (None,)


def test_notices_name_durability_validity_failures_and_group_each_warning_once() -> None:
    weak = "synchronous=off weakens durability"
    keying = "keying and think times off: a TPC-C-like run, not a TPC-C result (5.2.5)"
    runs = [_run(1, 10, {"synchronous": "off"}, (weak, keying)), _run(2, 10, {}, (keying,)),
            _run(3, 0, status=RunStatus.FAILED)]
    notices = tables.run_notices(runs)
    kinds = {(n.kind, n.text): n.runs for n in notices}
    assert kinds[("durability", weak)] == (1,)
    assert kinds[("run", keying)] == (1, 2)
    assert any(kind == "failed" and "boom" in text for kind, text in kinds)
    validity = [n for n in notices if n.kind == "validity"]
    assert validity and all("5.5.1.5" in n.text for n in validity)  # no rollbacks at all: out of band
    assert sum("rollback percent" in n.text for n in validity) == 1  # one notice per band, naming each run


def test_representative_is_the_median_tpmc_complete_run() -> None:
    runs = [_run(1, 30), _run(2, 10), _run(3, 20), _run(4, 90, status=RunStatus.FAILED)]
    assert representative(runs).id == 3
    assert representative(runs[:2]).id == 2  # even count: the lower one
    assert representative([]) is None


def test_step_tables_of_a_real_experiment_mark_the_changed_knob(finished_experiment) -> None:
    results, experiment_id = finished_experiment
    store = api.open_results(results)
    try:
        data = gather_experiment(store, experiment_id)
    finally:
        store.close()
    baseline, wal = tables.step_table(data, 0), tables.step_table(data, 1)
    assert baseline.changes == () and not any(changed for _, _, changed in baseline.knobs)
    assert wal.changes == (("journal_mode", "delete", "wal"),)
    assert [k for k, _, changed in wal.knobs if changed] == ["journal_mode"]
    assert [row.level for row in wal.rows] == [Level(1), Level(2)] and all(row.headline.n == 2 for row in wal.rows)
    assert all(row.vs_previous is not None and row.tps.mean > 0 for row in wal.rows)
    summary = tables.summary(data)
    assert summary.level == Level(2) and summary.baseline == "baseline" and summary.final == "wal"
    assert [name for name, _, _ in summary.verdicts] == ["wal"]
