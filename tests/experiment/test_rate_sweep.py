"""A real rate sweep on SQLite: every rate of the plan runs at its fixed throughput, and the experiment's curve of
response time against throughput, with its knee, reaches the terminal, the HTML report and the JSON export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from maximus import api
from maximus.experiment import runner
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


def test_show_prints_the_curves_table_with_the_knee(swept: tuple[Path, int]) -> None:
    results, experiment_id = swept
    shown = subprocess.run([sys.executable, "-m", "maximus", "experiment", "show", str(experiment_id), "--results",
                            str(results)], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0, shown.stderr
    table = shown.stdout.split("response time against throughput (5.6.2)")[1]
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
