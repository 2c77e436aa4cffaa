"""SIGTERM (kill, timeout, systemd, CI) is handled like Ctrl-C: what was measured is stored, servers and workers
are stopped, one line on stderr, exit code 143. A Ctrl-C to the whole process group while the terminals start
is one line too, and a run orphaned by SIGKILL is listed as having measured nothing."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from interrupting import worker_processes  # tests/interrupting.py
from maximus.records import RunStatus

RUN = ("run", "--warmup", "0.5", "--duration", "20")


def _interrupted_run(harness, returncode: int, stderr: str, code: int = 143, line: str = "error: terminated"):
    assert returncode == code, stderr
    assert harness.one_error(stderr) == line
    [run] = harness.runs()
    assert run.status is RunStatus.INTERRUPTED
    assert 0 < run.window.end - run.window.start < run.spec.duration_s  # cut at the signal
    assert len(harness.samples(run.id)) > 50  # what was measured is kept
    return run


def test_sigterm_during_a_sqlite_run_stores_what_it_measured(harness, sqlite_workdir: Path) -> None:
    process = harness.spawn(*RUN, "--workdir", str(sqlite_workdir), "--results", str(harness.results))
    harness.into_window(process, 2.0)
    process.terminate()
    returncode, stdout, stderr = harness.finish(process)
    run = _interrupted_run(harness, returncode, stderr)
    assert f"Stored as run {run.id}" in stdout  # its results are printed, as after a Ctrl-C
    harness.assert_nothing_left(sqlite_workdir)


def test_sigterm_to_the_process_group_during_a_run_stores_what_it_measured(harness, sqlite_workdir: Path) -> None:
    """systemd stops a service so: every process of it gets the SIGTERM, the terminals too, which leave it to
    Maximus (their samples would be lost with them)."""
    process = harness.spawn(*RUN, "--workdir", str(sqlite_workdir), "--results", str(harness.results),
                            own_group=True)
    harness.into_window(process, 2.0)
    os.killpg(process.pid, signal.SIGTERM)
    returncode, _, stderr = harness.finish(process)
    _interrupted_run(harness, returncode, stderr)
    harness.assert_nothing_left(sqlite_workdir)


def test_sigterm_during_a_postgres_run_stops_its_server(harness, postgres_build: Path) -> None:
    process = harness.spawn(*RUN, "-e", "postgres", "--workdir", str(postgres_build), "--results",
                            str(harness.results))
    harness.into_window(process, 2.0)
    process.terminate()
    returncode, _, stderr = harness.finish(process)
    _interrupted_run(harness, returncode, stderr)
    harness.assert_nothing_left(postgres_build)


def test_sigterm_during_a_build_leaves_no_half_of_it(harness, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    process = harness.spawn("run", "--workdir", str(workdir), "--results", str(harness.results))
    deadline = time.monotonic() + 60
    while not (workdir / "tpcc-1wh.sqlite").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # loading
    process.terminate()
    returncode, _, stderr = harness.finish(process)
    assert returncode == 143, stderr
    assert harness.one_error(stderr) == "error: terminated"
    assert not list(workdir.glob("*"))  # the next run builds again, from nothing
    assert not harness.runs()
    harness.assert_nothing_left(workdir)


def test_sigterm_during_an_experiment_says_how_to_resume_it(harness, tmp_path: Path, sqlite_workdir: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text('name = "sigterm"\nclients = [1]\nrepeats = 1\n[workload]\nwarmup = 0.5\nduration = 20\n')
    process = harness.spawn("experiment", "run", str(path), "--workdir", str(sqlite_workdir), "--results",
                            str(harness.results), cwd=tmp_path)
    harness.into_window(process, 1.0)
    process.terminate()
    returncode, stdout, stderr = harness.finish(process)
    _interrupted_run(harness, returncode, stderr)
    assert "`maximus experiment resume 1` runs what is left" in stdout
    harness.assert_nothing_left(sqlite_workdir)


@pytest.mark.parametrize(("signum", "code", "line"), [(signal.SIGINT, 130, "error: interrupted"),
                                                     (signal.SIGTERM, 143, "error: terminated")])
def test_a_signal_to_the_process_group_while_terminals_start_is_one_line(harness, sqlite_workdir: Path, signum: int,
                                                                         code: int, line: str) -> None:
    """A Ctrl-C at the terminal reaches every process of the group: terminals still importing their modules
    printed a traceback each (about 60 lines with 8 terminals)."""
    process = harness.spawn(*RUN, "--terminals", "8", "--workdir", str(sqlite_workdir), "--results",
                            str(harness.results), own_group=True)
    deadline = time.monotonic() + 60
    while len(_workers(harness)) < 5 and time.monotonic() < deadline:
        time.sleep(0.005)  # the first terminals are importing their modules; the others are on their way
    os.killpg(process.pid, signum)
    returncode, _, stderr = harness.finish(process)
    assert returncode == code, stderr
    assert harness.one_error(stderr) == line
    assert [run.status for run in harness.runs()] == [RunStatus.INTERRUPTED]
    harness.assert_nothing_left(sqlite_workdir)


def _workers(harness) -> list[int]:
    """The run's worker processes started so far."""
    return worker_processes(harness.processes())


def test_a_run_orphaned_by_sigkill_measured_nothing(harness, sqlite_workdir: Path) -> None:
    process = harness.spawn(*RUN, "--workdir", str(sqlite_workdir), "--results", str(harness.results))
    harness.into_window(process, 1.0)
    process.kill()
    process.wait(timeout=30)
    listed = harness.run("runs", "--results", str(harness.results))
    row = next(line for line in listed.stdout.splitlines() if " interrupted " in line)
    assert "0 s of 20 s" in row and " - " in row, row  # not "20 s" at a tpmC of 0
    [run] = harness.runs()
    assert run.window.end == run.window.start
    harness.assert_nothing_left(sqlite_workdir)
