"""The experiment runner on real SQLite runs: stores every planned run once, survives failures and kills."""

from __future__ import annotations

import json
import itertools
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from maximus import api
from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import EngineError
from maximus.experiment import runner
from maximus.records import RunStatus

from interrupting import default_dispositions  # tests/interrupting.py

EXPERIMENT = """\
name = "runner test"
clients = [1]
repeats = {repeats}
[workload]
warmup = 0.5
duration = {duration}
[baseline]
journal_mode = "delete"
[[steps]]
name = "wal"
set = {{ journal_mode = "wal" }}
"""


class Quiet:
    def __init__(self) -> None:
        self.finished: list[tuple[str, int | None, str | None]] = []

    def run_starting(self, position, total, planned):
        return None

    def run_finished(self, planned, run_id, error):
        self.finished.append((planned.key, run_id, error))

    def note(self, message):
        pass


def _write(tmp_path: Path, repeats: int = 2, duration: float = 1.5) -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT.format(repeats=repeats, duration=duration))
    return path


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    tmp_path = tmp_path_factory.mktemp("experiment")
    results = tmp_path / "results.db"
    experiment_id = runner.start(_write(tmp_path), tmp_path / "work", results, Quiet())
    return results, experiment_id


def test_every_planned_run_is_stored_once_and_summarised(finished: tuple[Path, int]) -> None:
    results, experiment_id = finished
    store = api.open_results(results)
    runs = store.runs(experiment_id)
    report = api.analyse_experiment(store, experiment_id)
    store.close()
    assert sorted(r.plan_key for r in runs) == ["s0/c1/r1", "s0/c1/r2", "s1/c1/r1", "s1/c1/r2"]
    assert {r.status for r in runs} == {RunStatus.COMPLETE}
    assert [r.loaded_in_run for r in runs] == [True, True, False, False]  # interleaved: each step builds once
    assert {r.engine_settings["journal_mode"] for r in runs if r.plan_key.startswith("s1")} == {"wal"}
    assert report.record.status == "complete"
    cell = report.summary.cell(1, 1)
    assert cell.headline.n == 2 and cell.headline.mean > 0 and cell.load_s.n == 1
    assert cell.vs_previous is not None and cell.vs_previous.verdict.value in ("faster", "slower", "within noise")
    assert "1 step" in report.summary.headline()


def test_compare_steps_as_json(finished: tuple[Path, int]) -> None:
    results, experiment_id = finished
    result = subprocess.run([sys.executable, "-m", "maximus", "compare", "baseline", "wal", "--experiment",
                             str(experiment_id), "--json", "--results", str(results)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["a"]["label"] == "step 'baseline' at 1 clients" and len(data["b"]["values"]) == 2
    assert data["method"] == "repeats" and data["low"] <= data["ratio"] <= data["high"]


def test_a_failing_run_is_recorded_with_its_reason_and_the_experiment_goes_on(tmp_path: Path, monkeypatch) -> None:
    real_connect = SQLiteEngine.connect

    def connect(engine):  # the WAL step's database "will not start"
        if engine.database.endswith("-s1"):
            raise EngineError("server will not start: injected")
        return real_connect(engine)

    monkeypatch.setattr(SQLiteEngine, "connect", connect)
    results = tmp_path / "results.db"
    observer = Quiet()
    experiment_id = runner.start(_write(tmp_path, repeats=1), tmp_path / "work", results, observer)
    store = api.open_results(results)
    runs = {r.plan_key: r for r in store.runs(experiment_id)}
    status = store.experiment(experiment_id).status
    store.close()
    assert runs["s0/c1/r1"].status is RunStatus.COMPLETE
    assert runs["s1/c1/r1"].status is RunStatus.FAILED
    assert "server will not start: injected" in runs["s1/c1/r1"].errors[0]
    assert status == "complete"
    assert [key for key, _, error in observer.finished if error] == ["s1/c1/r1"]


def _statuses(results: Path) -> list[tuple[str, str]]:
    try:
        with sqlite3.connect(results) as db:
            return db.execute("SELECT plan_key, status FROM runs ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []


def test_a_killed_experiment_resumes_and_stores_every_run_exactly_once(tmp_path: Path) -> None:
    results, workdir = tmp_path / "results.db", tmp_path / "work"
    path = _write(tmp_path, repeats=2, duration=2.0)
    command = [sys.executable, "-m", "maximus", "experiment", "run", str(path), "--workdir", str(workdir),
               "--results", str(results)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        statuses = _statuses(results)
        if sum(s == "complete" for _, s in statuses) >= 2 and statuses[-1][1] == "running":
            break
        time.sleep(0.1)
    time.sleep(1.0)  # well inside the third run
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert _statuses(results)[-1][1] == "running"  # the runner died mid-run
    resumed = subprocess.run([sys.executable, "-m", "maximus", "experiment", "resume", "--workdir", str(workdir),
                              "--results", str(results)], capture_output=True, text=True, timeout=300,
                             cwd=tmp_path)  # the report goes to the current directory, not the checkout
    assert resumed.returncode == 0, resumed.stderr
    assert "marked interrupted and will run again" in resumed.stdout
    statuses = _statuses(results)
    complete = Counter(key for key, status in statuses if status == "complete")
    assert sorted(complete) == sorted(f"s{s}/c1/r{r}" for s in (0, 1) for r in (1, 2))
    assert set(complete.values()) == {1}
    assert [status for _, status in statuses].count("interrupted") == 1
    assert "Summary:" in resumed.stdout


def _headings(output: str, marker: str) -> list[str]:
    """The headings of the first table whose heading holds ``marker``, each read across the lines it wraps over (a
    table is 120 characters wide off a terminal, so wide figures wrap its headings)."""
    lines = output.splitlines()
    first = next(n for n, line in enumerate(lines) if marker in line)
    while first > 0 and lines[first - 1].startswith("┃"):
        first -= 1
    rows = [line.strip("┃").split("┃") for line in itertools.takewhile(lambda line: line.startswith("┃"),
                                                                         lines[first:])]
    return [" ".join(part.strip() for part in column if part.strip()) for column in zip(*rows)]


def test_show_gives_each_step_a_verdict_against_the_baseline_and_the_reports_warnings(tmp_path: Path) -> None:
    """A step that turns durability off is marked in the terminal, not only in the HTML report, and its gain
    over the baseline has an interval and a verdict of its own, not the verdict against the step before."""
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT.format(repeats=2, duration=1.0) + '[[steps]]\nname = "sync off"\n'
                    'set = { synchronous = "off" }\n')
    results = tmp_path / "results.db"
    experiment_id = runner.start(path, tmp_path / "work", results, Quiet())
    shown = subprocess.run([sys.executable, "-m", "maximus", "experiment", "show", str(experiment_id), "--results",
                            str(results)], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "COLUMNS": "220"})
    assert shown.returncode == 0, shown.stderr
    assert "vs baseline (95 % CI)" in _headings(shown.stdout, "vs previous")
    sync_off = shown.stdout.split("Step 2: sync off")[1].split("warning")[0]
    assert len(re.findall(r"\([+-]\d+ … [+-]\d+\)", sync_off)) == 2, sync_off  # both gains with their interval
    assert len(re.findall(r"faster|slower|within noise|needs repeats", sync_off)) == 2, sync_off
    store = api.open_results(results)
    weak_runs = [r.id for r in store.runs(experiment_id) if r.plan_key.startswith("s2")]
    store.close()
    assert (f"warning (durability): sync off: synchronous=off weakens durability (runs "
            f"{', '.join(map(str, weak_runs))})") in " ".join(shown.stdout.split())


def test_ctrl_c_stops_an_experiment_with_the_command_that_resumes_it(tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    command = [sys.executable, "-m", "maximus", "experiment", "run", str(_write(tmp_path, repeats=1, duration=5.0)),
               "--workdir", str(tmp_path / "work"), "--results", str(results)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               preexec_fn=default_dispositions)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (_statuses(results) and _statuses(results)[-1][1] == "running"):
        time.sleep(0.1)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    assert "note: experiment 1 stopped: `maximus experiment resume 1` runs what is left" in stdout
    assert _statuses(results) == [("s0/c1/r1", "interrupted")]


def test_each_step_is_crash_tested_after_the_runs_once_and_shows_its_durability(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT.format(repeats=1, duration=1) + "[crashtest]\ncrashes = 1\nwarmup = 0.5\n"
                    "duration = 1\n")
    results, notes = tmp_path / "results.db", []
    observer = Quiet()
    observer.note = notes.append  # type: ignore[method-assign]
    experiment_id = runner.start(path, tmp_path / "work", results, observer)
    tests = api.crash_tests(results, experiment_id)
    assert [(record.test.plan_key, record.test.verdict.value) for record in tests] == [("s0/x1", "durable"),
                                                                                        ("s1/x1", "durable")]
    assert [record.test.knobs for record in tests] == [{"journal_mode": "delete"}, {"journal_mode": "wal"}]
    assert sum("crash test 1 (process): durable" in note for note in notes) == 2
    runner.resume(experiment_id, tmp_path / "work", results, observer)  # finished: nothing is crashed again
    assert len(api.crash_tests(results, experiment_id)) == 2
    summary = api.show_experiment(experiment_id, results).report.summary
    assert [summary.step_durability(step).durability_class for step in (0, 1)] == ["durable (1 process crash)"] * 2
