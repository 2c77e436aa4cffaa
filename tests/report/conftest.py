"""A real small experiment (SQLite, 2 configurations, clients 1 and 2, 2 repeats of 1.5 s), run once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from maximus.experiment import runner

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


class Quiet:
    """An experiment observer that prints nothing."""

    def run_starting(self, position, total, planned):
        return None

    def run_finished(self, planned, run_id, error):
        assert error is None, error

    def note(self, message):
        pass


@pytest.fixture(scope="session")
def finished_experiment(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """(results database, experiment id) of the experiment above, every run complete and monitored."""
    tmp_path = tmp_path_factory.mktemp("report-experiment")
    path = tmp_path / "experiment.toml"
    path.write_text(EXPERIMENT)
    results = tmp_path / "results.db"
    return results, runner.start(path, tmp_path / "work", results, Quiet())
