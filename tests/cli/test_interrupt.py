"""Ctrl-C during a run: the run is stored as interrupted with everything measured so far."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from interrupting import default_dispositions  # tests/interrupting.py

from maximus.store import ResultsStore


def _status(results: Path) -> tuple[str, int] | None:
    if not results.exists():
        return None
    try:
        with sqlite3.connect(results) as db:
            row = db.execute("SELECT status, id FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        return None
    return row


def _wait_until_measuring(results: Path, workdir: Path) -> None:
    """Until the run's first transactions have committed, then 4 s more: past the 1-s warm-up. The run's row
    is stored before its terminals start, which on a loaded machine can take seconds."""
    deadline = time.monotonic() + 60
    while _status(results) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    database = workdir / "tpcc-1wh.sqlite"
    before = database.stat().st_mtime_ns
    while database.stat().st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(4)


def test_interrupted_run_is_stored_as_interrupted_with_its_samples(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    process = subprocess.Popen([sys.executable, "-m", "maximus", "run", "--workdir", str(workdir), "--results",
                                str(results), "--warmup", "1", "--duration", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=default_dispositions)
    _wait_until_measuring(results, workdir)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    status, run_id = _status(results)
    assert status == "interrupted"
    with sqlite3.connect(results) as db:
        finished, start, end = db.execute("SELECT finished_at, window_start, window_end FROM runs WHERE id = ?",
                                          (run_id,)).fetchone()
    store = ResultsStore(results)
    stored = store.sample_columns(run_id)
    store.close()
    samples, last_end = len(stored), float(stored.end.max())
    assert samples > 50 and finished
    # the rates are over the seconds measured: the window ends at the stop, not at the planned 61 s
    assert start == 1.0 and start < end < 15.0
    assert end - 2.0 < last_end < end + 2.0
    listed = subprocess.run([sys.executable, "-m", "maximus", "runs", "--results", str(results)],
                            capture_output=True, text=True, timeout=60)
    assert f"{end - start:.1f} s of 60 s" in listed.stdout, listed.stdout


def test_a_run_whose_maximus_was_killed_is_shown_as_interrupted_not_running(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    process = subprocess.Popen([sys.executable, "-m", "maximus", "run", "--workdir", str(workdir), "--results",
                                str(results), "--warmup", "1", "--duration", "60"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while _status(results) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)
    assert _status(results)[0] == "running"
    process.kill()  # no handler runs: the row stays "running" until a store is opened again
    process.wait(timeout=30)
    listed = subprocess.run([sys.executable, "-m", "maximus", "runs", "--results", str(results)],
                            capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
    assert " interrupted " in listed.stdout and " running " not in listed.stdout, listed.stdout
    status, run_id = _status(results)
    shown = subprocess.run([sys.executable, "-m", "maximus", "show", str(run_id), "--results", str(results)],
                           capture_output=True, text=True, timeout=60)
    assert "the Maximus that ran it ended without finishing it" in " ".join(shown.stdout.split())
