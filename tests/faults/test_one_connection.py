"""``locking_mode=exclusive`` lets one connection use a SQLite database: with one terminal the run does all its
work on that terminal's connection, the deferred Deliveries included, instead of deadlocking against a deferred
worker's second connection for 100 s and storing a tpmC of 0 as complete."""

from __future__ import annotations

import time
from pathlib import Path

from maximus.records import Outcome, RunStatus


def test_locking_mode_exclusive_with_one_terminal_runs_every_transaction(harness, sqlite_workdir: Path) -> None:
    started = time.monotonic()
    result = harness.run("run", "-k", "locking_mode=exclusive", "--terminals", "1", "--warmup", "0.5", "--duration",
                         "3", "--workdir", str(sqlite_workdir), "--results", str(harness.results))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 60
    [run] = harness.runs()
    assert run.status is RunStatus.COMPLETE and run.engine_settings["locking_mode"] == "exclusive"
    samples = harness.samples(run.id)
    deliveries = [s for s in samples if s.transaction == "deferred_delivery"]
    assert deliveries and all(s.outcome is Outcome.COMMITTED for s in deliveries)
    assert not [s for s in samples if s.outcome is Outcome.FAILED]
    assert sum(s.transaction == "new_order" for s in samples) > 50
    assert all(row.passed is not False for row in harness.consistency(run.id))
    harness.assert_nothing_left(sqlite_workdir)
