"""Every environment problem ends as one line, `error: <cause>`, with exit code 2 (the user's choice) or 3 (the
file's or the system's state); no partial file is left, and the results database is never written to unless
it is Maximus's own (issue 29, point 5)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import sqlite3
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from maximus.engines.postgres import PostgresEngine
from maximus.store import ResultsStore

from .inputs_helpers import (COMPLETE, locks_in, maximus, one_line_error, servers_in, start, statuses, stop, stored,
                             wait_for)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextmanager
def _unwritable(path: Path) -> Iterator[None]:
    """``path`` nobody may change, root included (root ignores the mode bits: the immutable flag holds it)."""
    path.chmod(0o555 if path.is_dir() else 0o444)
    if os.geteuid() == 0 and subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable flag, which keeps root from writing")
    try:
        yield
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o755 if path.is_dir() else 0o644)


def _run(workdir: Path, results: Path, *more: str) -> tuple[str, ...]:
    return ("run", "--workdir", str(workdir), "--results", str(results), "--warmup", "0", "-d", "1", "--no-check",
            *more)


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory, built_workdir: Path) -> Path:
    """A results database with one complete run, to be copied and damaged."""
    directory = tmp_path_factory.mktemp("stored")
    work = directory / "work"
    shutil.copytree(built_workdir, work)
    results = directory / "r.db"
    assert maximus(*_run(work, results)).returncode == 0
    return results


# -- the work directory ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "load", "check"])
def test_a_work_directory_that_is_a_file_is_one_line(command: str, tmp_path: Path) -> None:
    file = tmp_path / "not-a-directory"
    file.write_text("mine\n")
    results = tmp_path / "r.db"
    args = (command, "--workdir", str(file / "deeper" if command == "check" else file)) + \
        (("--results", str(results)) if command == "run" else ())
    one_line_error(maximus(*args), 2, rf"^error: {re.escape(str(file))} is a file, not a directory: choose a "
                                      "directory$")
    assert file.read_text() == "mine\n" and not results.exists()


def test_a_work_directory_maximus_may_not_write_in_is_one_line_and_stays_empty(tmp_path: Path) -> None:
    workdir, results = tmp_path / "work", tmp_path / "r.db"
    workdir.mkdir()
    with _unwritable(workdir):
        result = maximus(*_run(workdir, results))
    one_line_error(result, 2, rf"^error: cannot write in {re.escape(str(workdir))} \(.+\): choose a directory "
                              "Maximus may write in$")
    assert not list(workdir.iterdir()) and not results.exists()


def test_a_work_directory_whose_name_is_too_long_is_one_line(tmp_path: Path) -> None:
    workdir = tmp_path / ("w" * 300)
    one_line_error(maximus(*_run(workdir, tmp_path / "r.db")), 2,
                   r"^error: the path .+ is too long for the file system \(\d+ bytes; a name holds at most 255\): "
                   "choose a shorter one$")
    assert not (tmp_path / "r.db").exists()


# -- the results database ---------------------------------------------------------------------------------------

def _damaged(source: Path, target: Path) -> Path:
    """Every page after the first overwritten: the schema reads, the runs do not."""
    data = bytearray(source.read_bytes())
    data[4096:] = bytes((n * 7 + 3) % 251 for n in range(len(data) - 4096))
    target.write_bytes(bytes(data))
    return target


def _truncated(source: Path, target: Path) -> Path:
    target.write_bytes(source.read_bytes()[:len(source.read_bytes()) // 2])
    return target


def _foreign(source: Path, target: Path) -> Path:
    with sqlite3.connect(target) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    db.close()
    return target


def _not_sqlite(source: Path, target: Path) -> Path:
    target.write_bytes(b"a text file, not a database\n" * 200)
    return target


@pytest.mark.parametrize(("make", "code", "pattern"), [
    (_damaged, 3, r"^error: the results database {path} is damaged \(database disk image is malformed\): restore it "
                  r"from a backup, or choose another --results$"),
    (_truncated, 3, r"^error: the results database {path} is damaged \(database disk image is malformed\): restore it "
                    r"from a backup, or choose another --results$"),
    (_foreign, 2, r"^error: {path} is not a Maximus results database \(it has the tables notes\): choose another "
                  r"--results$"),
    (_not_sqlite, 2, r"^error: {path} is not a Maximus results database \(file is not a database\): choose another "
                     r"--results$"),
])
@pytest.mark.parametrize("command", ["runs", "run"])
def test_a_results_database_that_is_not_a_sound_maximus_one_is_one_line_and_left_as_it_was(
        make, code: int, pattern: str, command: str, stored_run: Path, tmp_path: Path) -> None:
    results, workdir = make(stored_run, tmp_path / "results.db"), tmp_path / "new" / "work"
    before = _digest(results)
    args = _run(workdir, results) if command == "run" else ("runs", "--results", str(results))
    one_line_error(maximus(*args), code, pattern.format(path=re.escape(str(results))))
    assert _digest(results) == before  # another application's file got a schema_version table
    assert not list(tmp_path.glob("results.db-*"))
    assert not (tmp_path / "new").exists()  # the work directory made for its lock is gone with it


def test_an_empty_file_is_taken_as_a_new_results_database(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    results.touch()
    assert maximus(*_run(workdir, results)).returncode == 0
    assert [run.status for run in stored(results)] == [COMPLETE]


def test_a_read_only_results_database_is_listed_and_refuses_a_run_before_it_starts(
        stored_run: Path, workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    shutil.copyfile(stored_run, results)
    before = _digest(results)
    with _unwritable(results):
        listed = maximus("runs", "--results", str(results))
        refused = maximus(*_run(workdir, results))
    assert listed.returncode == 0 and "complete" in listed.stdout, listed.stderr
    one_line_error(refused, 2, rf"^error: the results database {re.escape(str(results))} cannot be written \(attempt "
                               r"to write a readonly database\): make it writable, or choose another --results$")
    assert _digest(results) == before and not locks_in(workdir)


@contextmanager
def _locked(results: Path) -> Iterator[None]:
    """Another program's write transaction on the results database (a DB browser's, a forgotten shell's)."""
    db = sqlite3.connect(results, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        db.execute("ROLLBACK")
        db.close()


def test_a_results_database_locked_by_another_process_is_one_line(stored_run: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    shutil.copyfile(stored_run, results)
    with _locked(results):
        result = maximus("runs", "--results", str(results), env={"MAXIMUS_RESULTS_TIMEOUT": "1"})
    one_line_error(result, 3, rf"^error: the results database {re.escape(str(results))} is locked by another process "
                              r"\(waited 1 s\): let it finish, or wait longer with \$MAXIMUS_RESULTS_TIMEOUT$")


def test_a_results_database_locked_as_the_run_ends_loses_nothing_measured(workdir: Path, tmp_path: Path) -> None:
    """The lock outlasts the wait: the run goes to a results database of its own beside it, and the line says
    where. It lost the run."""
    results = tmp_path / "r.db"
    process = start(*_run(workdir, results)[:-3], "-d", "3", env={"MAXIMUS_RESULTS_TIMEOUT": "1"})
    try:
        wait_for(lambda: statuses(results) == ["running"], what="the run to measure")
        with _locked(results):
            _, stderr = process.communicate(timeout=120)
    finally:
        stop(process)
    kept = tmp_path / "r.run-1.db"
    one_line_error(subprocess.CompletedProcess([], process.returncode, "", stderr), 3,
                   rf"locked by another process \(waited 1 s\).*; run 1 is kept in {re.escape(str(kept))} instead: "
                   rf"`maximus show 1 --results {re.escape(str(kept))}`$")
    (run,) = stored(kept)
    store = ResultsStore(kept)
    assert run.status is COMPLETE and len(store.samples(run.id)) > 100
    store.close()
    assert maximus("show", "1", "--results", str(kept)).returncode == 0
    assert not locks_in(workdir)


# -- the pristine copy, the experiment file ----------------------------------------------------------------------

def test_a_truncated_pristine_copy_is_built_again_with_a_note(workdir: Path, tmp_path: Path) -> None:
    pristine = workdir / "tpcc-1wh.pristine.sqlite"
    size = pristine.stat().st_size
    os.truncate(pristine, size // 2)
    results = tmp_path / "r.db"
    result = maximus(*_run(workdir, results))
    assert result.returncode == 0, result.stderr
    assert (f"note: the pristine copy {pristine} is damaged (database disk image is malformed): building it again"
            in " ".join(result.stdout.split()))
    (run,) = stored(results)
    assert run.status is COMPLETE and run.loaded_in_run
    assert pristine.stat().st_size == size  # the same build again, whole
    with sqlite3.connect(pristine) as db:
        assert db.execute("SELECT COUNT(*) FROM stock").fetchone() == (100_000,)
    db.close()
    assert not list(workdir.glob("*.partial"))


def test_an_experiment_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_bytes('name = "café"\n'.encode("latin-1"))
    one_line_error(maximus("experiment", "run", str(path), "--workdir", str(tmp_path / "work"), "--results",
                           str(tmp_path / "r.db")), 2,
                   rf"^error: {re.escape(str(path))}: not UTF-8 text \(byte 11: b'\\xe9'\): save the file as UTF-8$")
    assert not (tmp_path / "r.db").exists() and not (tmp_path / "work").exists()


# -- PostgreSQL's port --------------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_managed_server_listens_on_the_port_the_knob_names(server_workdir: Path, tmp_path: Path) -> None:
    """The server listened on the knob's port while Maximus connected to the one it had chosen: a traceback."""
    port, results = _free_port(), tmp_path / "r.db"
    result = maximus(*_run(server_workdir, results, "-e", "postgres", "-k", f"port={port}"))
    assert result.returncode == 0, result.stderr
    (run,) = stored(results)
    assert run.status is COMPLETE and run.engine_settings["port"] == str(port)
    assert not run.errors and not servers_in(server_workdir) and not locks_in(server_workdir)


def test_the_port_of_a_server_given_by_dsn_is_not_a_knob(server_workdir: Path, tmp_path: Path) -> None:
    users = PostgresEngine(server_workdir / "users-server", "postgres", {})
    users.start()
    try:
        result = maximus(*_run(tmp_path / "work", tmp_path / "r.db", "-e", "postgres", "--dsn",
                               users._dsn("postgres"), "-k", "port=5999"))
    finally:
        users.stop()
    one_line_error(result, 2, r"^error: port is not a knob of a server given by --dsn: Maximus connects to the port "
                              r"the DSN names, and your server would move away from it at its restart$")
    assert not (tmp_path / "r.db").exists()
