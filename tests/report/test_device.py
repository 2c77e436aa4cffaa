"""The device's limit on the read side beyond ``maximus show``: an experiment of storage-bound runs (the contract
suite's kv workload, read-only, on SQLite: fio runs its matching job before every run) held against fio per cell,
in ``experiment show``, the HTML report and the exports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contracts.kv_workload import KvWorkload  # tests/contracts
from maximus import api
from maximus.analysis.bundle import ExperimentData, gather_experiment
from maximus.cli.app import app
from maximus.experiment import runner
from maximus.experiment.plan import Level
from maximus.report import charts, html
from maximus.report.plotting import figure
from maximus.workloads import WORKLOADS
from observers import Quiet  # tests/observers.py

from . import test_html_browser as in_browser

browser = in_browser.browser  # Chromium, the fixture of the report's browser tests

# Two steps that change fio's job (buffered reads, then mmap), two client counts (one fio job per client), two
# repeats: fio's 1 s job runs before each of the 8 runs.
EXPERIMENT = """\
name = "device test"
clients = [1, 2]
repeats = 2
[workload]
name = "kv"
write_percent = 0
warmup = 0.5
duration = 1.5
[[steps]]
name = "mmap"
set = { mmap_size = 268435456 }
"""


@pytest.fixture(scope="module")
def device_experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """(results database, experiment id) of the experiment above, every run held against fio."""
    directory = tmp_path_factory.mktemp("device-experiment")
    path = directory / "experiment.toml"
    path.write_text(EXPERIMENT)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(WORKLOADS, KvWorkload.name, KvWorkload)
        experiment_id = runner.start(path, directory / "work", directory / "results.db", Quiet())
    return directory / "results.db", experiment_id


@pytest.fixture(scope="module")
def data(device_experiment: tuple[Path, int]) -> ExperimentData:
    results, experiment_id = device_experiment
    store = api.open_results(results)
    try:
        return gather_experiment(store, experiment_id)
    finally:
        store.close()


def test_every_cell_holds_its_runs_against_fio_over_the_repeats(data: ExperimentData) -> None:
    assert list(data.device) == [(0, Level(1)), (0, Level(2)), (1, Level(1)), (1, Level(2))]
    for (step, level), cell in data.device.items():
        runs = [r for r in data.cell_runs(step, level) if r.complete]
        comparisons = [r.report.device for r in runs]
        assert all(c is not None for c in comparisons) and cell.run_ids == tuple(r.id for r in runs)
        assert cell.unit == "reads/s" and cell.job.jobs == level.clients and cell.job.mapped == (step == 1)
        assert cell.database.n == cell.device.n == cell.ratio.n == 2
        assert cell.device.mean == pytest.approx(sum(c.device for c in comparisons if c) / 2)
        assert cell.ratio.mean == pytest.approx(sum(c.ratio.mean for c in comparisons if c) / 2)
        assert cell.ratio.low <= cell.ratio.mean <= cell.ratio.high
        assert cell.verdicts == tuple(c.verdict for c in comparisons if c)
        assert cell.verdict in cell.verdicts or "×" in cell.verdict


def test_a_cell_whose_runs_disagree_names_every_verdict_the_most_frequent_first(data: ExperimentData) -> None:
    from dataclasses import replace

    cell = next(iter(data.device.values()))
    assert replace(cell, verdicts=("CPU-bound", "CPU-bound")).verdict == "CPU-bound"
    mixed = replace(cell, verdicts=("CPU-bound", "device-bound", "device-bound"))
    assert mixed.verdict == "device-bound ×2, CPU-bound ×1"


def test_experiment_show_prints_the_cells_against_the_device_before_the_summary(
        device_experiment: tuple[Path, int], data: ExperimentData) -> None:
    results, experiment_id = device_experiment
    shown = CliRunner().invoke(app, ["experiment", "show", str(experiment_id), "--results", str(results)],
                               env={"COLUMNS": "160"})
    assert shown.exit_code == 0, shown.output
    output = shown.output
    assert "Against the device" in output and output.index("Against the device") < output.index("Summary:")
    cell = data.device[1, Level(2)]
    row = next(line for line in output.splitlines() if "1: mmap" in line and f"{cell.device.mean:,.0f} ±" in line)
    assert "reads/s" in row and f" {cell.ratio.mean:.2f} (" in row and cell.verdict.split(" ×")[0] in row


def test_an_experiment_without_fio_prints_no_device_table(finished_experiment: tuple[Path, int]) -> None:
    results, experiment_id = finished_experiment  # tests/report/conftest.py: TPC-C, which fio does not measure
    shown = CliRunner().invoke(app, ["experiment", "show", str(experiment_id), "--results", str(results)])
    assert shown.exit_code == 0, shown.output
    assert "Against the device" not in shown.output


def _export(results: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["export", *args, "--results", str(results)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_json_export_gives_each_run_and_each_cell_against_fio_with_fio_s_own_json(
        device_experiment: tuple[Path, int], data: ExperimentData) -> None:
    results, experiment_id = device_experiment
    document = json.loads(_export(results, str(experiment_id)))
    store = api.open_results(results)
    try:
        limits = {run["run"]["id"]: store.device_limit(run["run"]["id"]) for run in document["runs"]}
    finally:
        store.close()
    for run in document["runs"]:
        device, limit = run["device"], limits[run["run"]["id"]]
        assert limit is not None and device["fio"]["output"] == json.loads(json.dumps(limit.output))
        assert device["fio"]["rate"] == device["fio"]["iops"] == limit.iops and device["unit"] == "reads/s"
        assert device["job"]["pattern"] == "randread" and device["job"]["jobs"] == run["run"]["planned"]["clients"]
        assert device["ratio"]["mean"] == pytest.approx(device["database"]["mean"] / limit.iops)
        assert device["verdict"] in ("device-bound", "cache-bound", "CPU-bound") and device["reason"]
    for cell in document["cells"]:
        expected = data.device[cell["step"], Level(cell["clients"])]
        device = cell["device"]
        assert device["fio"]["mean"] == pytest.approx(expected.device.mean) and device["fio"]["n"] == 2
        assert device["ratio"]["mean"] == pytest.approx(expected.ratio.mean) and device["verdict"] == expected.verdict
        assert device["run_ids"] == list(expected.run_ids) and len(device["verdicts"]) == 2


def test_the_csv_exports_give_the_rates_ratio_and_verdict_per_cell_and_per_run(
        device_experiment: tuple[Path, int], data: ExperimentData) -> None:
    results, experiment_id = device_experiment
    cells = list(csv.DictReader(io.StringIO(_export(results, str(experiment_id), "--format", "csv", "--cells"))))
    assert len(cells) == 4
    for row in cells:
        expected = data.device[int(row["step"]), Level(int(row["clients"]))]
        assert row["device_unit"] == "reads/s" and row["device_verdict"] == expected.verdict
        assert float(row["fio_rate"]) == pytest.approx(expected.device.mean)
        assert float(row["database_rate"]) == pytest.approx(expected.database.mean)
        assert float(row["fio_ratio"]) == pytest.approx(expected.ratio.mean)
    runs = list(csv.DictReader(io.StringIO(_export(results, str(experiment_id), "--format", "csv"))))
    by_id = {run.id: run.report.device for run in data.runs}
    for row in runs:
        device = by_id[int(row["run_id"])]
        assert device is not None and float(row["fio_ratio"]) == pytest.approx(device.ratio.mean)
        assert row["device_verdict"] == device.verdict


def test_the_device_chart_puts_each_cells_database_rate_beside_fio_s_per_step(data: ExperimentData) -> None:
    chart = charts.device_chart(list(data.device.values()), data.report.summary.step_names)
    assert chart.unit == "reads/s" and not chart.note
    assert [(bar.step, bar.level) for bar in chart.bars] == [("baseline", Level(1)), ("baseline", Level(2)),
                                                             ("mmap", Level(1)), ("mmap", Level(2))]
    for bar in chart.bars:
        cell = data.device[data.report.summary.step_names.index(bar.step), bar.level]
        assert bar.database == pytest.approx(cell.database.mean) and bar.device == pytest.approx(cell.device.mean)
        assert bar.device_low == pytest.approx(cell.device.low) and bar.device_high == pytest.approx(cell.device.high)
        assert bar.ratio == pytest.approx(cell.ratio.mean) and bar.verdict == cell.verdict
    traces = figure(chart).data
    assert [trace.name for trace in traces] == ["the database", "fio (the device)"]
    assert all(trace.error_y.visible for trace in traces)
    nothing = charts.device_chart([], ["baseline"])
    assert not nothing.bars and nothing.note == "no run of this experiment was held against fio"


def test_the_html_report_has_the_device_chart_and_table_and_each_run_page_its_fio_job(
        data: ExperimentData) -> None:
    page = html.experiment_page(data)
    section = page[page.index('<section id="device">'):]
    section = section[:section.index("</section>")]
    assert 'data-chart="device"' in section and section.count("<tr>") == 5  # the header, then a row per cell
    cell = data.device[1, Level(2)]
    assert f"{cell.ratio.mean:.2f} (" in section and "1: mmap" in section
    run = next(r for r in data.runs if r.complete)
    device = run.report.device
    assert device is not None
    run_page = html.run_page(run)
    shown = run_page[run_page.index("<h3>Against the device</h3>"):]
    assert f"randread 4 KiB, {run.planned.clients if run.planned else 0} job" in shown
    assert f"{device.device:,.0f} reads/s" in shown and html.escape(device.verdict) in shown


def test_a_report_without_fio_has_no_device_section(finished_experiment: tuple[Path, int]) -> None:
    results, experiment_id = finished_experiment  # TPC-C: fio measures none of its runs
    store = api.open_results(results)
    try:
        tpcc = gather_experiment(store, experiment_id)
    finally:
        store.close()
    assert not tpcc.device
    page = html.experiment_page(tpcc)
    assert 'id="device"' not in page and "Against the device" not in html.run_page(tpcc.runs[0])


def test_the_device_chart_is_drawn_offline(browser, device_experiment: tuple[Path, int], tmp_path: Path) -> None:
    results, experiment_id = device_experiment
    path = tmp_path / "report.html"
    in_browser._report(results, path, str(experiment_id))
    view = in_browser.Page(browser, path)
    in_browser.ARTIFACTS.mkdir(exist_ok=True)
    view.page.screenshot(path=str(in_browser.ARTIFACTS / "report-device.png"), full_page=True)
    view.assert_clean()
    assert view.charts()["chart-device"] == 2  # the database's bars and fio's
    assert len(view.texts("#device table.device-cells tbody tr")) == 4
    view.context.close()
