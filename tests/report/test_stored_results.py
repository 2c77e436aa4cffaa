"""Reading stored results needs only the results database: an experiment's resolved model is stored with its plan
(its file is not read again, so its engine need not be here), and the run list counts each run's headline in one
query, equal to the figure the full analysis gives."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maximus import api
from maximus.analysis.experiment import analyse_experiment
from maximus.analysis.run import analyse_run, listed_runs
from maximus.cli.app import app
from maximus.errors import UserError
from maximus.experiment.loader import parse_experiment
from maximus.experiment.model import from_data
from maximus.records import Outcome, RunSpec, RunStart, RunStatus, TxnSample
from maximus.samples import RunEnd
from maximus.report.console import PLAIN_LISTING_ABOVE
from maximus.store import ResultsStore


def test_the_run_list_counts_each_headline_as_the_full_analysis_does(finished_experiment) -> None:
    results, _ = finished_experiment
    store = ResultsStore(results)
    try:
        listed = listed_runs(store)
        assert len(listed) == 8
        for record, presentation, headline in listed:
            report = analyse_run(store, record.id)
            assert (headline, presentation) == (report.figures.headline, report.presentation)
            assert headline > 0
    finally:
        store.close()


def test_an_experiment_is_read_from_its_stored_model_not_its_file(finished_experiment, tmp_path: Path) -> None:
    results, experiment_id = finished_experiment
    copy = tmp_path / "results.db"
    shutil.copy(results, copy)
    with sqlite3.connect(copy) as db:  # a file that no loader accepts: only the stored model can be read
        db.execute("UPDATE experiments SET source_text = 'not = [valid', source_path = '/gone.toml'")
    store = ResultsStore(copy)
    try:
        record = store.experiment(experiment_id)
        report = analyse_experiment(store, experiment_id)
        assert report.experiment == from_data(record.plan["model"])
        assert [step.name for step in report.experiment.steps] == ["baseline", "wal"]
        assert report.experiment.workload.duration_s == 1.5
    finally:
        store.close()


def test_an_experiment_stored_without_its_model_gets_it_where_its_file_still_validates(finished_experiment,
                                                                                       tmp_path: Path) -> None:
    """Stored by an older Maximus: ``open_results`` reads its file again once (its engine, SQLite, is here) and
    keeps the model; where that cannot be done, reading it says in one line what to do."""
    results, experiment_id = finished_experiment
    copy = tmp_path / "results.db"
    shutil.copy(results, copy)
    _drop_models(copy)
    store = api.open_results(copy)
    try:
        record = store.experiment(experiment_id)
        assert from_data(record.plan["model"]) == parse_experiment(record.source_text, Path(record.source_path))
    finally:
        store.close()
    _drop_models(copy)
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE experiments SET source_text = ?",  # a server engine whose installation is not here
                   ('name = "x"\nengine = "postgres"\n[baseline]\nbin_dir = "/nonexistent"\n',))
    store = api.open_results(copy)
    try:
        with pytest.raises(UserError, match=rf"^experiment {experiment_id} was stored by an older Maximus, which did "
                                            r"not keep its resolved settings: read it once on a machine where its "
                                            r"engine \(postgres\) runs, which keeps them$"):
            analyse_experiment(store, experiment_id)
    finally:
        store.close()


def _drop_models(results: Path) -> None:
    with sqlite3.connect(results) as db:
        for experiment_id, plan in db.execute("SELECT id, plan FROM experiments").fetchall():
            kept = {key: value for key, value in json.loads(plan).items() if key != "model"}
            db.execute("UPDATE experiments SET plan = ? WHERE id = ?", (json.dumps(kept), experiment_id))


def test_a_long_run_list_is_plain_columns_one_line_a_run(tmp_path: Path) -> None:
    """Past PLAIN_LISTING_ABOVE runs, rich's table layout (a second for 1,000 rows) gives way to plain columns:
    the same columns, one line each, the knobs last and whole."""
    results = tmp_path / "results.db"
    store = ResultsStore(results)
    spec = RunSpec("sqlite", {"journal_mode": "wal", "cache_size": "-64000"}, "tpcc",
                   {"warehouses": 1, "keying": False, "mix": "deck"}, 2, 1.0, 20.0, 1)
    count = PLAIN_LISTING_ABOVE + 1
    try:
        for _ in range(count):
            run_id = store.begin_run(RunStart(spec, effective_knobs={}, engine_settings={}, load_seconds=1.0,
                                              loaded_in_run=False, load_seed=1, constants={}, environment={}))
            samples = [TxnSample(0, "new_order", 2.0 + n / 10, 0.01, Outcome.COMMITTED) for n in range(60)]
            store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, samples, elapsed_s=21.0))
    finally:
        store.close()
    listed = CliRunner().invoke(app, ["runs", "--results", str(results)])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0] == "Runs" and lines[1].split()[:3] == ["Run", "Started", "(UTC)"]
    assert len(lines) == 2 + count
    assert lines[-1].split()[3:] == ["complete", "sqlite", "tpcc", "1", "wh", "2", "-", "20", "s", "180",
                                     "journal_mode=wal", "cache_size=-64000"]


def test_runs_are_read_from_their_stored_reading_not_their_workload(finished_experiment, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """With no workload registered at all, every run and the experiment read as before, and what they show of the
    workload (its benchmark label, its bands) is what the run stored: change it in the store and the report says so."""
    results, experiment_id = _copied(finished_experiment, tmp_path)
    before = _read_all(results, experiment_id)
    monkeypatch.setattr("maximus.workloads.WORKLOADS", {})
    assert _read_all(results, experiment_id) == before
    with sqlite3.connect(results) as db:
        db.execute("UPDATE runs SET reading = json_set(reading, '$.presentation.benchmark', 'Stored-Bench',"
                   " '$.validity[0].high', 0.0)")
    store = api.open_results(results)
    try:
        report = analyse_run(store, store.runs()[0].id)
    finally:
        store.close()
    assert report.presentation.benchmark == "Stored-Bench"
    assert report.validity[0].high == 0.0 and report.validity[0].status == "OUT OF BAND"


def test_runs_stored_without_their_reading_get_it_from_their_workload(finished_experiment, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored by an older Maximus: ``open_results`` asks their workload once and keeps it; where the workload is not
    known, reading them says so in one line."""
    results, experiment_id = _copied(finished_experiment, tmp_path)
    before = _read_all(results, experiment_id)
    _drop_readings(results)
    assert _read_all(results, experiment_id) == before
    _drop_readings(results)
    monkeypatch.setattr("maximus.workloads.WORKLOADS", {})
    store = api.open_results(results)
    try:
        run_id = store.runs()[0].id
        with pytest.raises(UserError, match=rf"^run {run_id} was stored by an older Maximus, which did not keep how "
                                            r"to read it, and this Maximus does not know its workload 'tpcc'$"):
            analyse_run(store, run_id)
        with pytest.raises(UserError, match=rf"^experiment {experiment_id} was stored by an older Maximus, which did "
                                            r"not keep how to read its runs, and this Maximus does not know its "
                                            r"workload$"):
            analyse_experiment(store, experiment_id)
    finally:
        store.close()


def _copied(finished: tuple[Path, int], tmp_path: Path) -> tuple[Path, int]:
    """The experiment's results database, copied: the fixture's is shared by the tests of this module."""
    results, experiment_id = finished
    shutil.copy(results, tmp_path / "results.db")
    return tmp_path / "results.db", experiment_id


def _read_all(results: Path, experiment_id: int) -> tuple:
    store = api.open_results(results)
    try:
        runs = [analyse_run(store, record.id) for record in store.runs()]
        experiment = analyse_experiment(store, experiment_id)
        return ([(r.presentation, r.figures.headline, r.validity, r.mix, r.warnings) for r in runs],
                listed_runs(store), experiment.presentation, experiment.summary)
    finally:
        store.close()


def _drop_readings(results: Path) -> None:
    with sqlite3.connect(results) as db:
        db.execute("UPDATE runs SET reading = NULL")
        db.execute("UPDATE experiments SET plan = json_remove(plan, '$.reading')")
