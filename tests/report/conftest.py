"""A real small experiment (SQLite, 2 configurations, clients 1 and 2, 2 repeats of 1.5 s), run once per session:
once for all of the session's xdist workers, each of which reads a copy of its results."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from maximus.experiment import runner

from observers import Quiet  # tests/observers.py

EXPERIMENT = """\
name = "report test"
clients = [1, 2]
repeats = 2
[workload]
warmup = 0.5
duration = 1.5
[baseline]
journal_mode = "delete"
[[steps]]
name = "wal"
set = { journal_mode = "wal" }
"""


@pytest.fixture(scope="session")
def finished_experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """(results database, experiment id) of the experiment above, every run complete and monitored."""
    own = tmp_path_factory.mktemp("report-experiment")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _run(own)
    shared = tmp_path_factory.getbasetemp().parent / "report-experiment"  # this session's, all workers'
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the first worker runs it; the others wait for its results
        done = shared / "experiment-id"
        if not done.exists():
            results, experiment_id = _run(shared)
            done.write_text(str(experiment_id))
    shutil.copy(shared / "results.db", own / "results.db")
    return own / "results.db", int(done.read_text())


def _run(directory: Path) -> tuple[Path, int]:
    path = directory / "experiment.toml"
    path.write_text(EXPERIMENT)
    results = directory / "results.db"
    return results, runner.start(path, directory / "work", results, Quiet())
