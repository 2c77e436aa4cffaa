"""``maximus export`` on a real experiment: every figure and the raw series, as JSON and as CSV."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maximus import api
from maximus.cli.app import app
from maximus.errors import UserError
from maximus.export import RESULT_FILE_COLUMNS, SAMPLE_COLUMNS, SERIES_COLUMNS, plain, write_samples
from maximus.records import Outcome, TxnSample
from maximus.samples import Samples


def _export(results: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["export", *args, "--results", str(results)])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def document(finished_experiment) -> dict:
    """The experiment's JSON export, through the real command."""
    results, experiment_id = finished_experiment
    done = subprocess.run([sys.executable, "-m", "maximus", "export", str(experiment_id), "--format", "json",
                           "--results", str(results)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout, parse_constant=lambda name: pytest.fail(f"{name} in the JSON export"))


def test_json_has_every_cell_with_estimates_ratios_and_verdicts(document) -> None:
    assert document["kind"] == "experiment" and document["schema"] == 2
    assert document["experiment"]["name"] == "report test"
    cells = {(c["step_name"], c["clients"]): c for c in document["cells"]}
    assert sorted(cells) == [("baseline", 1), ("baseline", 2), ("wal", 1), ("wal", 2)]
    wal = cells["wal", 2]
    assert wal["tpmc"]["n"] == 2 and wal["tpmc"]["low"] <= wal["tpmc"]["mean"] <= wal["tpmc"]["high"]
    assert wal["vs_previous"]["verdict"] in ("faster", "slower", "within noise")
    assert wal["vs_previous"]["change_percent"] == pytest.approx(100 * (wal["vs_previous"]["ratio"] - 1))
    assert cells["baseline", 1]["vs_previous"] is None and wal["tps"]["mean"] > 0
    assert wal["device"] is None and document["runs"][0]["device"] is None  # TPC-C: not storage-bound
    assert document["summary"]["headline"].endswith("1 step significant")


def test_json_has_every_run_with_figures_latencies_validity_consistency_and_raw_series(document,
                                                                                     finished_experiment) -> None:
    results, _ = finished_experiment
    runs = document["runs"]
    assert len(runs) == 8
    store = api.open_results(results)
    try:
        expected = {r["run"]["id"]: api.analyse_run(store, r["run"]["id"]).figures.headline for r in runs}
    finally:
        store.close()
    for run in runs:
        assert run["figures"]["tpmc"] == expected[run["run"]["id"]]
        assert [t["name"] for t in run["transactions"]][-2:] == ["deferred_delivery", "stock_level"]
        assert {"count", "p90", "average", "maximum"} <= set(run["transactions"][0]["latency"])
        assert len(run["validity"]) == 7 and {b["status"] for b in run["validity"]} <= {"ok", "OUT OF BAND", "n/a",
                                                                                         "no data"}
        assert run["validity"][-1]["name"] == "skipped_delivery_percent"  # 2.7.4.2, from the Delivery result file
        assert len(run["consistency"]) == 12
        assert run["run"]["benchmark"].startswith("TPC-C-like") and run["run"]["planned"]["key"]
        assert run["series"]["per_second"] and run["series"]["metrics"]
        assert run["monitoring"]["figures"]["cpu"]["user"] is not None
    skipped = [run["validity"][-1] for run in runs]  # 1.5-s windows: a run's Deliveries may all end after its end
    assert {band["value"] for band in skipped} <= {0.0, None} and sum(band["sample"] for band in skipped) >= 10


def test_csv_has_one_row_per_run_with_its_figures(finished_experiment, document) -> None:
    results, experiment_id = finished_experiment
    rows = list(csv.DictReader(io.StringIO(_export(results, str(experiment_id), "--format", "csv"))))
    assert len(rows) == 8
    header = list(rows[0])
    workload_named = ["workload", "warehouses", "keying", "mix", "benchmark", "tpmc", "nopm", "new_order_count",
                      "deferred_delivery_p90_ms", "stock_level_max_ms", "rollback_percent",
                      "skipped_delivery_percent", "new_order_share_pct", "stock_level_share_pct"]
    assert [name for name in header if name in workload_named] == workload_named  # asked of the workload, in order
    assert {row["workload"] for row in rows} == {"tpcc"} and {row["keying"] for row in rows} == {"False"}
    by_id = {r["run"]["id"]: r for r in document["runs"]}
    for row in rows:
        run = by_id[int(row["run_id"])]
        assert int(row["tpmc"]) == run["figures"]["tpmc"]
        assert row["step_name"] == run["run"]["planned"]["step_name"] and row["clients"] in ("1", "2")
        assert float(row["new_order_p90_ms"]) == pytest.approx(1000 * run["transactions"][0]["latency"]["p90"])
        assert row["log_sync_wait_ms"] == ""  # SQLite reports no waits: an empty cell, not 0
        assert int(row["consistency_passed"]) + int(row["consistency_skipped"]) == 12
        out_of_band = {b["name"] for b in run["validity"] + run["mix"] if b["status"] == "OUT OF BAND"}
        assert set(row["out_of_band"].split()) == out_of_band
    assert any(row["out_of_band"] for row in rows)  # short runs: too few New-Orders to roll back 0.9-1.1 %


def test_csv_cells_and_series(finished_experiment) -> None:
    results, experiment_id = finished_experiment
    cells = list(csv.DictReader(io.StringIO(_export(results, str(experiment_id), "--format", "csv", "--cells"))))
    assert [(c["step_name"], c["clients"]) for c in cells] == [("baseline", "1"), ("baseline", "2"), ("wal", "1"),
                                                              ("wal", "2")]
    assert cells[0]["vs_previous_verdict"] == "" and cells[3]["vs_previous_verdict"]
    device = ("device_unit", "database_rate", "fio_rate", "fio_ratio", "device_verdict")  # TPC-C: fio measured none
    assert all(name in cells[0] and cells[0][name] == "" for name in device)
    text = _export(results, "--format", "csv", "--series")  # the newest experiment by default
    series = list(csv.DictReader(io.StringIO(text)))
    assert list(series[0]) == SERIES_COLUMNS
    assert len({row["run_id"] for row in series}) == 8
    names = {(row["source"], row["name"]) for row in series}
    assert {("driver", "new_orders_completed"), ("driver", "transactions_completed"),
            ("os", "cpu_seconds_total"), ("sqlite", "commits_total")} <= names


def test_the_delivery_result_file_has_a_row_per_delivery_with_its_orders_as_stored(finished_experiment,
                                                                                    document) -> None:
    """2.7.2.3: queue and completion times, warehouse, carrier, each district's order (or "skipped")."""
    results, experiment_id = finished_experiment
    text = _export(results, str(experiment_id), "--format", "csv", "--result-file")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == RESULT_FILE_COLUMNS
    stored = [(run["run"]["id"], result) for run in document["runs"] for result in run["result_file"]]
    assert len(rows) == len(stored) > 8 and len({row["run_id"] for row in rows}) == 8
    for row, (run_id, result) in zip(rows, stored):
        assert int(row["run_id"]) == run_id and float(row["queued_s"]) == result["queued"] < result["completed"]
        assert row["outcome"] == result["outcome"] == "committed" and row["w_id"] == "1"
        orders = [row[f"d{district}"] for district in range(1, 11)]
        assert orders == [str(order) for order in result["record"]["delivered"]] and all(map(str.isdigit, orders))


def test_a_single_run_exports_alone(finished_experiment, tmp_path: Path) -> None:
    results, experiment_id = finished_experiment
    store = api.open_results(results)
    run_id = store.runs(experiment_id)[-1].id
    store.close()
    target = tmp_path / "run.json"
    _export(results, "--run", str(run_id), "-o", str(target))
    data = json.loads(target.read_text())
    assert data["kind"] == "run" and data["run"]["id"] == run_id and "cells" not in data
    rows = list(csv.DictReader(io.StringIO(_export(results, "--run", str(run_id), "--format", "csv"))))
    assert [int(r["run_id"]) for r in rows] == [run_id]


def test_the_samples_csv_has_every_stored_sample_of_each_run_as_its_record(finished_experiment,
                                                                           tmp_path: Path) -> None:
    """``--samples``: the raw samples every figure is computed from, a row each, written to a file or streamed."""
    results, experiment_id = finished_experiment
    rows = list(csv.DictReader(io.StringIO(_export(results, str(experiment_id), "--format", "csv", "--samples"))))
    assert list(rows[0]) == SAMPLE_COLUMNS
    store = api.open_results(results)
    try:
        runs = [run.id for run in store.runs(experiment_id)]
        assert sorted({int(row["run_id"]) for row in rows}) == runs
        first = runs[0]
        stored = store.samples(first)
    finally:
        store.close()
    exported = [TxnSample(int(r["terminal"]), r["transaction"], float(r["start_s"]), float(r["latency_s"]),
                          Outcome(r["outcome"]), int(r["attempts"]), r["error"],
                          float(r["intended_s"]) if r["intended_s"] else None)
                for r in rows if int(r["run_id"]) == first]
    assert len(stored) > 100 and exported == stored
    written = tmp_path / "out" / "samples.csv"
    _export(results, "--run", str(first), "--format", "csv", "--samples", "-o", str(written))
    assert list(csv.DictReader(written.open())) == [row for row in rows if int(row["run_id"]) == first]
    missing = tmp_path / "missing.csv"
    kept = tmp_path / "kept.csv"
    kept.write_text("what was there\n")
    for target in (missing, kept):
        result = CliRunner().invoke(app, ["export", "--run", "999", "--format", "csv", "--samples", "-o",
                                          str(target), "--results", str(results)])
        assert isinstance(result.exception, UserError) and "no run 999" in str(result.exception)
    assert not missing.exists() and kept.read_text() == "what was there\n"
    result = CliRunner().invoke(app, ["export", "--run", str(first), "--format", "csv", "--samples", "-o",
                                      str(tmp_path), "--results", str(results)])
    assert isinstance(result.exception, UserError) and f"cannot write {tmp_path}" in str(result.exception)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept.csv", "out"]  # no partial file left


def test_the_samples_csv_keeps_any_error_text_in_its_row() -> None:
    """A database's error text is free text: commas, quotes, line ends and a carriage return alone stay in its
    field."""
    texts = ["", "a, b", 'say "no"', "two\nlines", "server said\rgoodbye", "crlf\r\nend"]
    samples = Samples.of([TxnSample(n, "read_row", 0.5 * n, 0.001, Outcome.FAILED if text else Outcome.COMMITTED,
                                    1, text, 0.25 * n if n % 2 else None) for n, text in enumerate(texts)])
    out = io.StringIO(newline="")
    write_samples(out, [(7, samples)])
    rows = list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))
    assert [row["error"] for row in rows] == texts and {row["run_id"] for row in rows} == {"7"}
    assert [row["intended_s"] for row in rows] == ["", "0.25", "", "0.75", "", "1.25"]


def test_bad_export_options_are_one_line_errors(finished_experiment) -> None:
    results, _ = finished_experiment
    for args, message in ((["--series"], "add --format csv"),
                          (["--run", "1", "--format", "csv", "--cells"], "--cells needs an experiment"),
                          (["1", "--run", "1"], "not both"),
                          (["--format", "csv", "--series", "--result-file"], "choose one CSV table"),
                          (["--samples"], "add --format csv"),
                          (["--format", "csv", "--samples", "--series"], "choose one CSV table")):
        result = CliRunner().invoke(app, ["export", *args, "--results", str(results)])
        assert isinstance(result.exception, UserError) and message in str(result.exception)
    done = subprocess.run([sys.executable, "-m", "maximus", "export", "--format", "xml", "--results", str(results)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == "error: --format must be json or csv, got 'xml'\n"


def test_plain_turns_nan_into_null_and_enums_into_values() -> None:
    from maximus.analysis.compare import Ratio, Verdict

    assert plain(Ratio(float("nan"), 1.0, float("inf"), Verdict.NEEDS_REPEATS, None)) == {
        "ratio": None, "low": 1.0, "high": None, "verdict": "needs repeats", "repeats_needed": None}
