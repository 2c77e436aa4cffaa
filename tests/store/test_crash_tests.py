"""Crash tests in the results store: stored whole, read back as they were given, kept through an upgrade."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from maximus.records import CrashMode, Verdict
from maximus.store import ResultsStore
from maximus.store.schema import MIGRATIONS, SCHEMA_VERSION

from crashes import FAILED, crash_test  # tests/crashes.py


def test_a_crash_test_is_read_back_as_it_was_stored(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    test = crash_test(Verdict.INCONSISTENT, CrashMode.PROCESS, lost=2, recovery_s=None, notes=("did not restart",),
                      environment={"host": {"kernel": "x"}})
    test_id = store.add_crash_test(test)
    store.close()
    [record] = ResultsStore(tmp_path / "r.db").crash_tests()
    assert record.id == test_id and record.at.endswith("+00:00")
    assert record.test == test
    assert FAILED in record.test.checks and isinstance(record.test.findings.lost, tuple)


def test_crash_tests_are_chosen_by_experiment_or_number_in_the_order_stored(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    experiment_id = store.create_experiment("crashing", "x.toml", "", {"runs": []})
    alone = store.add_crash_test(crash_test())
    first = store.add_crash_test(crash_test(experiment_id=experiment_id, plan_key="s0/x1"))
    second = store.add_crash_test(crash_test(Verdict.LOST, lost=3, experiment_id=experiment_id, plan_key="s1/x1"))
    assert [r.id for r in store.crash_tests()] == [alone, first, second]
    assert [r.id for r in store.crash_tests(experiment_id)] == [first, second]
    assert [r.id for r in store.crash_tests(ids=[second, alone, 10**30])] == [alone, second]
    assert [r.id for r in store.crash_tests(experiment_id, ids=[alone, second])] == [second]
    assert store.crash_tests(experiment_id + 1) == [] and store.crash_tests(ids=[]) == []
    assert store.crash_tests(experiment_id)[1].test.plan_key == "s1/x1"


def test_a_version_7_database_is_upgraded_with_an_empty_crash_test_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        for statements in MIGRATIONS[:7]:
            for statement in statements:
                db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (7)")
    store = ResultsStore(path)
    assert store.crash_tests() == []
    test_id = store.add_crash_test(crash_test())
    assert [r.id for r in store.crash_tests()] == [test_id]
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
