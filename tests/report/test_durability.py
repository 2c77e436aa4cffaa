"""Crash tests on the read side: a durability column beside each step's throughput (terminal, HTML, exports) when
an experiment has crash tests, none when it has not; the listing of crash tests alone."""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from maximus import api
from maximus.cli.app import app
from maximus.export import cells_table, crash_tests_text, experiment_document
from maximus.errors import UserError
from maximus.records import CrashMode, CrashTest, CrashTestRecord, Verdict
from maximus.report import html
from maximus.report.durability import render_crash_tests
from maximus.report.experiment_console import render_experiment
from maximus.store import ResultsStore

from crashes import crash_test  # tests/crashes.py

BASELINE_CLASS = "durable (3 power cuts)"
WAL_CLASS = "loses commits (lost 5 in 2 of 3 power cuts)"


def _with_crash_tests(experiment: tuple[Path, int], directory: Path, tests: list[CrashTest]) -> tuple[Path, int]:
    """A copy of the experiment's results with ``tests`` stored as the runner stores a step's crash tests."""
    results, experiment_id = experiment
    copy = directory / "results.db"
    shutil.copy(results, copy)
    store = ResultsStore(copy)
    for test in tests:
        store.add_crash_test(replace(test, experiment_id=experiment_id))
    store.close()
    return copy, experiment_id


def _baseline_tests() -> list[CrashTest]:
    return [crash_test(seed=n, plan_key=f"s0/x{n}") for n in (1, 2, 3)]


@pytest.fixture(scope="module")
def crash_tested(finished_experiment, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The report's experiment with crash tests for each step: the baseline durable in 3 power cuts, the WAL step
    losing commits in 2 of 3."""
    wal = [crash_test(Verdict.LOST, lost=n, seed=n, knobs={"journal_mode": "wal"}, plan_key=f"s1/x{n - 1}")
           for n in (2, 3)] + [crash_test(seed=1, knobs={"journal_mode": "wal"}, plan_key="s1/x3")]
    return _with_crash_tests(finished_experiment, tmp_path_factory.mktemp("crash-tested"), _baseline_tests() + wal)


def _console() -> Console:
    return Console(record=True, width=250, color_system=None)


def _shown(results: Path, experiment_id: int) -> str:
    data = api.show_experiment(experiment_id, results)
    console = _console()
    render_experiment(console, data.report)
    return console.export_text()


def test_the_step_tables_show_each_steps_durability_beside_its_gain(crash_tested) -> None:
    text = _shown(*crash_tested)
    assert "Durability" in text and "3 crash tests" not in text and "6 crash tests" in text
    baseline, wal = text.split("Step 1:")
    assert BASELINE_CLASS in baseline and WAL_CLASS in wal
    assert f"final step {WAL_CLASS}" in text  # the summary line reads the gain with its price


def test_the_step_tables_with_durability_fit_the_piped_width(crash_tested) -> None:
    data = api.show_experiment(crash_tested[1], crash_tested[0])
    console = Console(record=True, width=120, color_system=None)  # cli.console's width when piped
    render_experiment(console, data.report)
    tops = [line.rstrip() for line in console.export_text().splitlines() if line.startswith("┏")]
    assert len(tops) == 2 and all(line.endswith("┓") for line in tops)  # not cropped


def test_an_experiment_without_crash_tests_has_no_durability_column(finished_experiment) -> None:
    text = _shown(*finished_experiment)
    assert "Durability" not in text and "crash test" not in text and "final step" not in text


def test_a_step_not_crash_tested_says_so(finished_experiment, tmp_path: Path) -> None:
    _, wal = _shown(*_with_crash_tests(finished_experiment, tmp_path, _baseline_tests())).split("Step 1:")
    assert "not tested" in wal and "final step" not in wal


def test_experiment_show_prints_the_durability_column(crash_tested) -> None:
    results, experiment_id = crash_tested
    shown = CliRunner().invoke(app, ["experiment", "show", str(experiment_id), "--results", str(results)],
                               env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.output
    assert "Durability" in shown.output and "loses commits" in shown.output


def test_the_html_report_shows_durability_in_the_summary_and_each_step(crash_tested) -> None:
    page = html.experiment_page(api.show_experiment(crash_tested[1], crash_tested[0]))
    summary = page.split('id="summary"')[1].split("</section>")[0]
    assert "<th>Durability</th>" in summary and BASELINE_CLASS in summary and WAL_CLASS in summary
    step = page.split('id="step-1"')[1].split("</section>")[0]
    assert 'class="durability-lost"' in step and "<th>Durability</th>" in step
    assert "below 63 % (95 % upper bound)" in page.split('id="step-0"')[1]  # 3 cuts, no loss: 1 - 0.05^(1/3)


def test_the_html_report_of_an_experiment_without_crash_tests_has_no_durability(finished_experiment) -> None:
    page = html.experiment_page(api.show_experiment(finished_experiment[1], finished_experiment[0]))
    assert "Durability" not in page


def test_the_exports_carry_each_steps_durability(crash_tested) -> None:
    results, experiment_id = crash_tested
    data = api.show_experiment(experiment_id, results)
    document = json.loads(json.dumps(experiment_document(data)))
    assert [s["durability"]["class"] for s in document["steps"]] == [BASELINE_CLASS, WAL_CLASS]
    [power] = document["steps"][0]["durability"]["modes"]
    assert power["cycles"] == 3 and power["loss_bound"] == pytest.approx(1 - 0.05 ** (1 / 3))
    assert {c["step"]: c["durability"] for c in document["cells"]} == {0: BASELINE_CLASS, 1: WAL_CLASS}
    assert len(document["crash_tests"]) == 6 and document["crash_tests"][3]["test"]["verdict"] == "lost"
    header, rows = cells_table(data)
    cells = [dict(zip(header, row)) for row in rows]
    assert [(c["step"], c["durability_worst"]) for c in cells] == [(0, "durable")] * 2 + [(1, "lost")] * 2


def test_exports_without_crash_tests_keep_their_columns_empty(finished_experiment) -> None:
    data = api.show_experiment(finished_experiment[1], finished_experiment[0])
    document = experiment_document(data)
    assert all(s["durability"] is None for s in document["steps"]) and document["crash_tests"] == []
    header, rows = cells_table(data)
    assert "durability" in header and all(row[header.index("durability")] is None for row in rows)


def test_the_listing_shows_every_cycle_its_failures_and_each_configurations_class(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    for seed in range(4):
        store.add_crash_test(crash_test(mode=CrashMode.PROCESS, seed=seed))
    store.add_crash_test(crash_test(Verdict.INCONSISTENT, recovery_s=None, notes=("the server did not start",)))
    store.add_crash_test(crash_test(knobs={"synchronous": "off"}, verdict=Verdict.LOST, lost=7))
    store.close()
    records = api.crash_tests(tmp_path / "r.db")
    console = _console()
    render_crash_tests(console, records)
    text = console.export_text()
    assert "Crash tests" in text and "Experiment" not in text  # no test belongs to one
    assert text.count(" sqlite ") >= 6 and "did not recover" in text
    assert "test 5: 3.3.2.3 max(NO_O_ID)" in text and "test 5: the server did not start" in text
    assert "sqlite synchronous=full · process: durable (4 process crashes)" in text
    assert "below 53 % (95 % upper bound)" in text  # 4 crashes, no loss: 1 - 0.05^(1/4)
    assert "sqlite synchronous=full · power: inconsistent after 1 of 1 power cut" in text
    assert "sqlite synchronous=off · power: loses commits (lost 7 in 1 of 1 power cut)" in text


def test_crash_tests_are_listed_by_experiment_and_exported(crash_tested) -> None:
    results, experiment_id = crash_tested
    records = api.crash_tests(results, experiment_id)
    assert [r.test.plan_key for r in records][:2] == ["s0/x1", "s0/x2"]
    assert all(isinstance(r, CrashTestRecord) for r in records)
    with pytest.raises(UserError, match="no experiment"):
        api.crash_tests(results, experiment_id + 100)
    rows = list(csv.DictReader(io.StringIO(api.export_crash_tests(results, experiment_id, output_format="csv"))))
    assert [row["lost"] for row in rows] == ["0", "0", "0", "2", "3", "0"]
    assert json.loads(crash_tests_text(records))["crash_tests"][0]["test"]["mode"] == "power"
