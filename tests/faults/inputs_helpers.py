"""What the tests of locks, inputs and environment errors share: the real ``maximus`` command in a session of
its own, its one-line errors, and what it must not leave behind (a process of its session, a server, a lock)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from maximus.records import RunStatus
from maximus.store import ResultsStore

from interrupting import default_dispositions, kill_group  # tests/interrupting.py


def maximus(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 180) -> subprocess.CompletedProcess:
    """The command run to its end, in a session of its own; afterwards no process of that session is left."""
    process = start(*args, cwd=cwd, env=env)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        stop(process)
    assert_left_nothing_running(process)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def assert_left_nothing_running(process: subprocess.Popen) -> None:
    """No worker or server the command started outlives it (they end with it, within a few seconds)."""
    deadline = time.monotonic() + 10
    while session_processes(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not session_processes(process.pid), f"processes of {process.args[3:]} outlived it"


def start(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "maximus", *args], cwd=cwd, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=default_dispositions)


def stop(process: subprocess.Popen) -> None:
    """A command a failed test left running: its whole session, ours alone, by its id."""
    if process.poll() is None:
        kill_group(process.pid)
        process.communicate(timeout=30)


def session_processes(session: int) -> list[int]:
    """The live processes of a session (a command's workers, a server it started there), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found


def servers_in(workdir: Path) -> list[int]:
    """PostgreSQL servers whose data directory is in ``workdir``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if words and words[0].endswith(b"postgres") and any(str(workdir).encode() in w for w in words):
            found.append(int(cmdline.parent.name))
    return found


def one_line_error(result: subprocess.CompletedProcess, code: int, pattern: str) -> str:
    """The command failed with ``code`` and a single ``error:`` line matching ``pattern`` (a regular expression)."""
    assert result.returncode == code, (result.returncode, result.stderr, result.stdout[-2000:])
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]


def wait_for(condition: Callable[[], object], timeout: float = 90, what: str = "") -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or condition}")


def statuses(results: Path) -> list[str]:
    """The stored runs' statuses, read without opening a ResultsStore (which would mark orphans)."""
    try:
        with sqlite3.connect(f"{results.absolute().as_uri()}?mode=ro", uri=True) as db:
            return [status for (status,) in db.execute("SELECT status FROM runs ORDER BY id")]
    except sqlite3.Error:
        return []


def stored(results: Path) -> list:
    """Every run of the results database, as Maximus reads it."""
    store = ResultsStore(results)
    try:
        return store.runs()
    finally:
        store.close()


def failed_transactions(results: Path, run_id: int) -> int:
    store = ResultsStore(results)
    try:
        return sum(sample.outcome.value == "failed" for sample in store.samples(run_id))
    finally:
        store.close()


def locks_in(*directories: Path) -> list[Path]:
    return [path for directory in directories if directory.exists() for path in directory.glob("*.lock")]


COMPLETE = RunStatus.COMPLETE


EXPERIMENT = """name = "{name}"
clients = [1]
repeats = {repeats}
order = "sequential"

[workload]
warehouses = 1
warmup = 0
duration = {duration}

[baseline]
{baseline}

[[steps]]
name = "wal"
set = {{ journal_mode = "wal" }}
"""


def experiment_file(directory: Path, name: str = "shared", repeats: int = 2, duration: float = 1.0,
                    baseline: str = "") -> Path:
    path = directory / f"{name}-{repeats}{'-' + baseline.split()[0] if baseline else ''}.toml"
    path.write_text(EXPERIMENT.format(name=name, repeats=repeats, duration=duration, baseline=baseline))
    return path
