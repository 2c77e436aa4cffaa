"""A fault never becomes a result: a run whose engine stopped or whose data went bad is stored as failed, with
the first real cause in one line and everything it measured, and the command exits with code 3."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from maximus import api, runs
from maximus.errors import EngineError
from maximus.records import Outcome, RunStatus

RUN = ("run", "--warmup", "0.5", "--duration", "20")


def _failed_run(harness, stderr: str, returncode: int, cause: str):
    """The one run stored as failed with ``cause`` first, cut where the fault was found, its samples kept."""
    assert returncode == 3, stderr
    line = harness.one_error(stderr)
    assert cause in line and "is stored as failed" in line, line
    [run] = harness.runs()
    assert run.status is RunStatus.FAILED
    assert cause in run.errors[0]
    assert run.window.end - run.window.start < run.spec.duration_s  # the run stopped at the fault
    assert harness.samples(run.id), "what was measured before the fault is stored"
    assert not harness.consistency(run.id)  # no check of a database that failed
    return run


def test_a_sqlite_database_file_deleted_mid_run_fails_the_run(harness, sqlite_workdir: Path) -> None:
    process = harness.spawn(*RUN, "--workdir", str(sqlite_workdir), "--results", str(harness.results))
    harness.into_window(process, 1.0)
    (sqlite_workdir / "tpcc-1wh.sqlite").unlink()
    returncode, _, stderr = harness.finish(process)
    _failed_run(harness, stderr, returncode, f"the database file {sqlite_workdir / 'tpcc-1wh.sqlite'} disappeared "
                                             "during the run")
    # the consistency check did not restore the pristine copy to check it instead
    assert not (sqlite_workdir / "tpcc-1wh.sqlite").exists()
    harness.assert_nothing_left(sqlite_workdir)


def test_a_sqlite_database_file_corrupted_mid_run_fails_the_run(harness, sqlite_workdir: Path) -> None:
    process = harness.spawn(*RUN, "--workdir", str(sqlite_workdir), "--results", str(harness.results))
    harness.into_window(process, 1.0)
    database = sqlite_workdir / "tpcc-1wh.sqlite"
    with open(database, "r+b") as file:  # every page after the first overwritten, as a bad disk or a stray dd would
        file.seek(4096)
        file.write(os.urandom(database.stat().st_size - 4096))
    returncode, _, stderr = harness.finish(process)
    _failed_run(harness, stderr, returncode, f"the database file {database} is corrupt")
    harness.assert_nothing_left(sqlite_workdir)


def test_a_disk_that_fills_mid_run_fails_the_run(harness, sqlite_workdir: Path, small_disks) -> None:
    size = (sqlite_workdir / "tpcc-1wh.sqlite").stat().st_size / 2 ** 20
    with small_disks.mount(int(2 * size + 20)) as disk:
        shutil.copytree(sqlite_workdir, disk / "work")
        process = harness.spawn(*RUN, "--workdir", str(disk / "work"), "--results", str(harness.results))
        harness.into_window(process, 1.0)
        subprocess.run(["dd", "if=/dev/zero", f"of={disk / 'filler'}", "bs=1M"], capture_output=True)
        returncode, _, stderr = harness.finish(process)
        _failed_run(harness, stderr, returncode, f"the disk holding {disk / 'work'} is full")
        harness.assert_nothing_left(disk)


def _without_payments(workdir: Path) -> None:
    """Every Payment fails, as a transaction of the workload's own, not a fault of the engine: a trigger in the
    pristine copy, which each run restores, refuses its history rows."""
    with sqlite3.connect(workdir / "tpcc-1wh.pristine.sqlite") as db:
        db.execute("CREATE TRIGGER no_payment BEFORE INSERT ON history BEGIN SELECT RAISE(ABORT, 'injected'); END")


def test_failed_transactions_above_the_threshold_fail_the_run(harness, sqlite_workdir: Path) -> None:
    """Payment, 10 cards of 23, failing every time: far more than the 1 % allowed."""
    _without_payments(sqlite_workdir)
    result = harness.run("run", "--warmup", "0.5", "--duration", "3", "--workdir", str(sqlite_workdir), "--results",
                         str(harness.results))
    assert result.returncode == 3, result.stderr
    line = harness.one_error(result.stderr)
    assert "transactions in the measured window failed" in line and "more than the 1 % allowed" in line, line
    assert "the first: IntegrityError: injected" in line, line
    [run] = harness.runs()
    assert run.status is RunStatus.FAILED and run.errors[0] in line
    failed = [s for s in harness.samples(run.id) if s.outcome is Outcome.FAILED]
    assert failed and {s.transaction for s in failed} == {"payment"}


def test_the_failure_threshold_is_the_users_to_set(harness, sqlite_workdir: Path) -> None:
    _without_payments(sqlite_workdir)  # about 43 % of the transactions
    result = harness.run("run", "--warmup", "0.5", "--duration", "3", "--max-failed", "60", "--workdir",
                         str(sqlite_workdir), "--results", str(harness.results))
    assert result.returncode == 0, result.stderr
    [run] = harness.runs()
    assert run.status is RunStatus.COMPLETE
    refused = harness.run("run", "--max-failed", "nan", "--workdir", str(sqlite_workdir), "--results",
                          str(harness.results))
    assert refused.returncode == 2 and "--max-failed must be a percentage" in harness.one_error(refused.stderr)


@pytest.mark.parametrize("mode", ["server", "client"])
def test_a_postgres_server_killed_mid_window_fails_the_run(harness, postgres_build: Path, postmaster, kill_server,
                                                           mode: str) -> None:
    process = harness.spawn(*RUN, "-e", "postgres", "--transactions", mode, "--workdir", str(postgres_build),
                            "--results", str(harness.results))
    harness.into_window(process, 1.0)
    kill_server(postmaster(postgres_build))
    returncode, _, stderr = harness.finish(process)
    run = _failed_run(harness, stderr, returncode, "the PostgreSQL server stopped during the run")
    assert "stopping PostgreSQL failed" not in stderr  # a stop that fails after the fault never replaces it
    assert run.spec.options["transactions"] == mode
    harness.assert_nothing_left(postgres_build)


def test_a_fast_shutdown_of_the_server_mid_run_fails_the_run(harness, postgres_build: Path, stop_fast) -> None:
    process = harness.spawn(*RUN, "-e", "postgres", "--workdir", str(postgres_build), "--results",
                            str(harness.results))
    harness.into_window(process, 1.0)
    stop_fast(postgres_build)
    returncode, _, stderr = harness.finish(process)
    _failed_run(harness, stderr, returncode, "the PostgreSQL server stopped during the run: received fast shutdown "
                                             "request")
    harness.assert_nothing_left(postgres_build)


EXPERIMENT = """\
name = "faults {mark}"
engine = "postgres"
clients = [1]
repeats = 2
order = "sequential"
[workload]
warmup = 0.5
duration = {duration}
max_failed = 5
[baseline]
work_mem = "4MB"
[[steps]]
name = "more work_mem"
set = {{ work_mem = "8MB" }}
"""


def test_a_run_whose_server_stops_mid_experiment_counts_in_no_figure(harness, tmp_path: Path, stop_fast) -> None:
    """The experiment goes on after the failed run, and its step statistics and verdicts leave it out: a baseline
    cut short by the fault would make the step look 769 % faster."""
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT.format(mark=harness.mark, duration=2))
    pg_workdir = Path("/var/tmp") / f"maximus-faults-{harness.mark}"
    pg_workdir.mkdir(mode=0o755)
    try:
        process = harness.spawn("experiment", "run", str(path), "--workdir", str(pg_workdir), "--results",
                                str(harness.results), cwd=tmp_path)
        harness.into_window(process, 0.5)
        stop_fast(pg_workdir)
        returncode, stdout, stderr = harness.finish(process, timeout=240)
        harness.assert_nothing_left(pg_workdir)
    finally:
        shutil.rmtree(pg_workdir, ignore_errors=True)
    assert returncode == 3, stderr
    line = harness.one_error(stderr)
    assert "1 run(s) of experiment 1 failed" in line and "received fast shutdown request" in line, line
    assert "Summary:" in stdout  # the step tables and the report come first
    statuses = {run.plan_key: run.status for run in harness.runs()}
    assert statuses == {"s0/c1/r1": RunStatus.FAILED, "s0/c1/r2": RunStatus.COMPLETE, "s1/c1/r1": RunStatus.COMPLETE,
                        "s1/c1/r2": RunStatus.COMPLETE}
    store = api.open_results(harness.results)
    try:
        summary = api.analyse_experiment(store, 1).summary
    finally:
        store.close()
    baseline = summary.cell(0, 1)
    assert baseline.headline.n == 1 and baseline.failed == 1
    assert summary.cell(1, 1).vs_baseline.verdict.value == "needs repeats"


def test_a_server_that_dies_as_the_terminals_start_is_the_runs_cause(postgres_build: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     kill_server: Callable[[int], None]) -> None:
    """The server killed after the run was stored and before its terminals connected: the run fails with the
    server's death as its cause (the watch's words), not "terminal process 0 could not start", and is stored as
    measuring nothing, not as the seconds it planned."""
    real_drive = runs.drive

    def drive_on_a_dead_server(spec, *args, **kwargs):
        kill_server(spec.engine.server_pid())
        return real_drive(spec, *args, **kwargs)

    monkeypatch.setattr(runs, "drive", drive_on_a_dead_server)
    results = tmp_path / "results.db"
    with pytest.raises(EngineError) as failed:
        api.run_benchmark(api.BenchmarkOptions(engine="postgres", workdir=postgres_build, results=results,
                                               terminals=2, warmup_s=0.5, duration_s=5.0, monitor=False))
    assert "the PostgreSQL server stopped" in str(failed.value) and "could not start" not in str(failed.value)
    store = api.open_results(results)
    try:
        [run] = store.runs()
    finally:
        store.close()
    assert run.status is RunStatus.FAILED and "the PostgreSQL server stopped" in run.errors[0]
    assert run.window.end == run.window.start  # nothing measured
