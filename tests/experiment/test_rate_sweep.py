"""A real rate sweep on SQLite: every rate of the plan runs at its fixed throughput, the step tables and exports give
each rate a cell of its own, and the experiment's curve of response time against throughput, with its knee, reaches
the terminal, the HTML report and the JSON export."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from maximus import api
from maximus.errors import UserError
from maximus.experiment import runner
from maximus.experiment.plan import Level
from maximus.records import ARRIVALS_OPTION, RATE, RunStatus

from observers import Quiet  # tests/observers.py

SWEEP = """\
name = "rate sweep test"
clients = [2]
repeats = 1
rates = [20, 60]
[workload]
warmup = 0.5
duration = 2
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    directory = tmp_path_factory.mktemp("rate-sweep")
    path = directory / "experiment.toml"
    path.write_text(SWEEP)
    results = directory / "results.db"
    return results, runner.start(path, directory / "work", results, Quiet())


def test_each_rate_is_a_run_at_that_rate_under_its_own_key(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    store = api.open_results(results)
    runs = store.runs(experiment_id)
    store.close()
    assert [r.plan_key for r in runs] == ["s0/c2/q20/r1", "s0/c2/q60/r1"]
    assert {r.status for r in runs} == {RunStatus.COMPLETE}
    assert [(r.spec.options[RATE], r.spec.options[ARRIVALS_OPTION]) for r in runs] == [("20", "regular"),
                                                                                         ("60", "regular")]


def test_the_curve_has_a_point_per_rate_and_its_knee_is_one_of_them(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    data = api.show_experiment(experiment_id, results)
    [curve] = data.rate_curves
    assert (curve.step, curve.clients) == (0, 2)
    assert [point.rate for point in curve.points] == [20.0, 60.0]
    assert all(len(point.run_ids) == 1 and point.achieved.mean > 0 for point in curve.points)
    assert all(point.latency_p90_s.mean >= point.service_p90_s.mean > 0 for point in curve.points)
    assert curve.knee in curve.points
    assert curve.verdict.startswith(f"knee at {curve.knee.rate:g}/s")


def _show(results: Path, experiment_id: int) -> str:
    shown = subprocess.run([sys.executable, "-m", "maximus", "experiment", "show", str(experiment_id), "--results",
                            str(results)], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_each_rate_is_a_cell_of_its_own_run(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    data = api.show_experiment(experiment_id, results)
    summary = data.report.summary
    assert summary.levels == (Level(2, 20.0), Level(2, 60.0))
    by_rate = {run.planned.rate: run.id for run in data.runs if run.planned}
    assert [(cell.rate, cell.run_ids) for cell in summary.cells] == [(20.0, (by_rate[20.0],)),
                                                                     (60.0, (by_rate[60.0],))]


def _p90_ms(results: Path, run_id: int) -> float:
    report = api.report_of_run(results, run_id)
    [new_order] = [figures for figures in report.figures.transactions if figures.name == "new_order"]
    return new_order.latency.p90 * 1000


def test_compare_takes_the_steps_runs_at_one_rate_the_highest_unless_asked(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    cells = api.show_experiment(experiment_id, results).report.summary
    highest = api.compare("baseline", "0", experiment_id, results=results)
    assert highest.a_label == "step 'baseline' at 2 clients @ 60/s"
    # each kept its rate: compared by New-Order's p90 latency from the intended start, each run's own as shown
    assert highest.figure == "New-Order p90 latency ms" and not highest.higher_is_better
    assert highest.a_values == [_p90_ms(results, cells.cell(0, 2, 60.0).run_ids[0])]
    asked = api.compare("baseline", "0", experiment_id, results=results, rate=20)
    assert asked.a_values == [_p90_ms(results, cells.cell(0, 2, 20.0).run_ids[0])] != highest.a_values
    with pytest.raises(UserError, match="no runs at 40/s"):
        api.compare("baseline", "0", experiment_id, results=results, rate=40)


def test_the_step_table_has_a_row_per_rate_with_its_own_figures_and_no_mixed_cell(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    output = _show(results, experiment_id)
    step = output.split("Step 0: baseline (baseline)")[1].split("response time against throughput")[0]
    rows = {line.split("│")[1].strip(): line.split("│") for line in step.splitlines() if line.startswith("│ ")}
    assert list(rows) == ["2 @ 20/s", "2 @ 60/s"], step
    tpmc = {label: float(cells[3].split("±")[0].replace(",", "")) for label, cells in rows.items()}
    # about 45 % of the transactions are New-Orders: three times the rate, about three times the tpmC
    assert tpmc["2 @ 60/s"] > 1.5 * tpmc["2 @ 20/s"] > 0, tpmc
    assert "@ rate" in step and "interval wider than" not in output  # one run a cell: no interval to be wide


def test_the_html_step_table_has_a_row_per_rate(swept: tuple[Path, int], tmp_path: Path) -> None:
    results, experiment_id = swept
    page = api.report(experiment_id, output=tmp_path / "report.html", results=results).read_text()
    table = page.split('class="step-table"')[1].split("</table>")[0]
    assert "<th class=\"text\">Clients @ rate</th>" in table
    assert [row.split("</td>")[0] for row in table.split('<td class="text">')[1:]] == ["2 @ 20/s", "2 @ 60/s"]


def test_the_csv_exports_give_each_cell_and_run_its_rate_last(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    cells = list(csv.reader(io.StringIO(api.export(experiment_id, output_format="csv", table="cells",
                                                   results=results))))
    assert cells[0][-1] == "rate" and [row[-1] for row in cells[1:]] == ["20.0", "60.0"]
    assert [row[:3] for row in cells[1:]] == [["0", "baseline", "2"], ["0", "baseline", "2"]]
    runs = list(csv.reader(io.StringIO(api.export(experiment_id, output_format="csv", results=results))))
    assert runs[0][-1] == "rate" and [row[-1] for row in runs[1:]] == ["20.0", "60.0"]


def test_show_prints_the_curves_table_with_the_knee(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    table = _show(results, experiment_id).split("response time against throughput (5.6.2)")[1]
    knee = api.show_experiment(experiment_id, results).rate_curves[0].knee
    assert knee is not None
    rows = {line.split("│")[1].strip(): line for line in table.splitlines() if line.count("│") > 6}
    assert {"20", "60"} <= set(rows), table
    assert "◀ knee" in rows[f"{knee.rate:g}"] and [row for row in rows.values() if "◀ knee" in row] == \
        [rows[f"{knee.rate:g}"]]
    assert f"knee at {knee.rate:g}/s" in " ".join(table.split())


def test_the_html_report_draws_the_curve_and_marks_the_knee(swept: tuple[Path, int], tmp_path: Path) -> None:
    results, experiment_id = swept
    page = api.report(experiment_id, output=tmp_path / "report.html", results=results).read_text()
    section = page.split('id="rate-curve"')[1].split("</section>")[0]
    assert 'data-chart="rate-curve"' in section and '"symbol":"star"' in section
    knee = api.show_experiment(experiment_id, results).rate_curves[0].knee
    assert knee is not None and f'data-knee="{knee.rate:g}"' in section
    assert "<td class=\"text\">20</td>" in section and "<td class=\"text\">60</td>" in section
    assert section.count("◀ knee") == 1


def test_the_json_export_gives_each_runs_rate(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    document = json.loads(api.export(experiment_id, results=results))
    assert [run["run"]["planned"]["rate"] for run in document["runs"]] == [20.0, 60.0]
    assert document["experiment"]["model"]["rates"] == [20.0, 60.0]


def test_a_resume_runs_no_finished_rate_again(swept: tuple[Path, int], tmp_path: Path) -> None:
    results, experiment_id = swept
    runner.resume(experiment_id, tmp_path / "work", results, Quiet())
    store = api.open_results(results)
    keys = [r.plan_key for r in store.runs(experiment_id)]
    store.close()
    assert keys == ["s0/c2/q20/r1", "s0/c2/q60/r1"]
