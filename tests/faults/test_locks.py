"""Two Maximus processes never share a work directory's databases or an experiment: the second gets one line
naming the first one's pid (exit code 2), and a lock whose holder died blocks nobody (issue 29, point 2)."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from maximus.engines import _process
from maximus.records import RunStatus

from interrupting import group_members, kill_group  # tests/interrupting.py

from .inputs_helpers import (COMPLETE, assert_left_nothing_running, experiment_file, failed_transactions, locks_in,
                             maximus, one_line_error, servers_in, start, statuses, stop, stored, wait_for)


def _run(workdir: Path, results: Path, duration: str, *more: str) -> tuple[str, ...]:
    return ("run", "--workdir", str(workdir), "--results", str(results), "--warmup", "0", "-d", duration, *more)


def test_a_second_sqlite_run_in_a_work_directory_in_use_is_refused_and_the_first_is_untouched(
        workdir: Path, tmp_path: Path) -> None:
    """The second run restored the pristine copy under the first (139,467 failed transactions, stored complete)."""
    results = tmp_path / "r.db"
    first = start(*_run(workdir, results, "4"))
    try:
        wait_for(lambda: statuses(results) == ["running"], what="the first run to measure")
        second = maximus(*_run(workdir, results, "1"))
        one_line_error(second, 2, rf"^error: the database tpcc-1wh in {re.escape(str(workdir))} is in use by Maximus "
                                  rf"process {first.pid}: wait for it to finish, or use another --workdir$")
        _, stderr = first.communicate(timeout=120)
    finally:
        stop(first)
    assert first.returncode == 0, stderr
    (run,) = stored(results)  # the second stored nothing
    assert run.status is COMPLETE and failed_transactions(results, run.id) == 0
    assert_left_nothing_running(first)
    assert not locks_in(workdir)


def test_a_lock_left_by_a_killed_maximus_blocks_nobody(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    first = start(*_run(workdir, results, "60"))
    try:
        wait_for(lambda: statuses(results) == ["running"], what="the first run to measure")
        lock = workdir / "tpcc-1wh.lock"
        assert lock.read_text() == f"{first.pid}\n"  # the holder's pid, for the second one's message
        kill_group(first.pid)  # no handler runs: the file stays, the kernel drops the lock
        first.communicate(timeout=30)
    finally:
        stop(first)
    assert lock.exists()
    second = maximus(*_run(workdir, results, "1"))
    assert second.returncode == 0, second.stderr
    assert [run.status for run in stored(results)] == [RunStatus.INTERRUPTED, COMPLETE]
    assert not locks_in(workdir)


def test_a_second_managed_postgres_run_in_a_work_directory_in_use_is_refused_and_leaves_the_server_up(
        server_workdir: Path, tmp_path: Path) -> None:
    """The second stopped the first's live server as a "leftover"; both crashed, the first stored complete."""
    results = tmp_path / "r.db"
    first = start(*_run(server_workdir, results, "5", "-e", "postgres"))
    try:
        wait_for(lambda: statuses(results) == ["running"], timeout=180, what="the first run to measure")
        second = maximus(*_run(server_workdir, results, "1", "-e", "postgres"))
        one_line_error(second, 2, rf"^error: the PostgreSQL cluster {re.escape(str(server_workdir))}/postgres-\d+ is "
                                  rf"in use by Maximus process {first.pid}: wait for it to finish, or use another "
                                  r"--workdir$")
        _, stderr = first.communicate(timeout=180)
    finally:
        stop(first)
    assert first.returncode == 0, stderr
    (run,) = stored(results)
    assert run.status is COMPLETE and failed_transactions(results, run.id) == 0
    assert_left_nothing_running(first)
    assert not servers_in(server_workdir) and not locks_in(server_workdir)


def test_resume_refuses_an_experiment_that_is_still_running(tmp_path: Path) -> None:
    """Both runners executed the plan, one run twice; "5 of 4 runs finished", both exit 0."""
    workdir, results = tmp_path / "work", tmp_path / "r.db"
    paths = ("--workdir", str(workdir), "--results", str(results))
    runner = start("experiment", "run", str(experiment_file(tmp_path)), *paths, cwd=tmp_path)
    try:
        wait_for(lambda: "running" in statuses(results), what="the experiment's first run")
        resumed = maximus("experiment", "resume", *paths, cwd=tmp_path)
        one_line_error(resumed, 2, rf"^error: experiment 1 is in use by Maximus process {runner.pid}: wait for it to "
                                   r"finish, or stop it and run `maximus experiment resume 1` then$")
        assert "interrupted" not in statuses(results)  # its run under way was not taken for a dead runner's
        _, stderr = runner.communicate(timeout=180)
    finally:
        stop(runner)
    assert runner.returncode == 0, stderr
    assert statuses(results) == ["complete"] * 4
    assert not locks_in(tmp_path, workdir)


def _named_semaphores(inodes: set[int]) -> list[Path]:
    """The named semaphores (/dev/shm/sem.*) among the shared memory files of these inodes."""
    return [path for path in _process.shared_memory_files(inodes) if path.name.startswith("sem.")]


def test_a_maximus_killed_with_its_whole_group_leaves_no_named_semaphore(workdir: Path, tmp_path: Path) -> None:
    """A run's queues and events are named semaphores (/dev/shm/sem.mp-*) until its workers have them open, and then
    lose their names: multiprocessing's resource tracker, which would have removed them, dies in the same SIGKILL."""
    results = tmp_path / "r.db"
    first = start(*_run(workdir, results, "60"))
    mapped: set[int] = set()  # the inodes of every file under /dev/shm the group was seen to map

    def unnamed() -> bool:
        now = _process.shared_memory(group_members(first.pid))[0]
        mapped.update(now)
        return len(mapped) >= 10 and not _named_semaphores(now)

    try:
        wait_for(lambda: statuses(results) == ["running"], what="the first run to measure")
        wait_for(unnamed, timeout=30, what="the run's semaphores to lose their names once its workers run")
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # no handler runs, and the resource tracker ends too
        first.communicate(timeout=30)
        stop(first)
        left = _named_semaphores(mapped)
        for path in left:  # removed before a failure is reported: the suite leaves nothing behind
            path.unlink()
    assert not left
    assert len(mapped) >= 10  # its outbox's, deliveries', go's and stop's semaphores (3, 3, 4 and 4)


def test_two_experiments_of_one_name_never_run_on_each_others_step_databases(tmp_path: Path) -> None:
    """The second one's builds (16 KiB pages) were taken for the first one's on its resume: its runs recorded
    page_size=4096 while SQLite reported 16384."""
    workdir, results = tmp_path / "work", tmp_path / "r.db"
    paths = ("--workdir", str(workdir), "--results", str(results))
    first = start("experiment", "run", str(experiment_file(tmp_path, repeats=1)), *paths, cwd=tmp_path)
    try:
        wait_for(lambda: statuses(results) == ["complete", "running"], what="the first experiment's second run")
        os.killpg(first.pid, signal.SIGINT)  # a Ctrl-C: it stops, to be resumed
        first.communicate(timeout=60)
    finally:
        stop(first)
    assert first.returncode == 130
    second = maximus("experiment", "run", str(experiment_file(tmp_path, repeats=1, baseline="page_size = 16384")),
                     *paths, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    resumed = maximus("experiment", "resume", "1", *paths, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    runs = [run for run in stored(results) if run.experiment_id == 1 and run.status is COMPLETE]
    assert len(runs) == 2
    assert {run.engine_settings["page_size"] for run in runs} == {"4096"}
    assert not [warning for run in runs for warning in run.warnings if "was asked" in warning]
