"""The results store: versioned schema, runs written as they start and finish, raw samples kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from maximus.errors import UserError
from maximus.records import Outcome, RunSpec, RunStatus, TxnSample
from maximus.store import ResultsStore
from maximus.store.schema import SCHEMA_VERSION

SPEC = RunSpec("sqlite", {"journal_mode": "wal"}, "tpcc", 1, 2, 1.0, 4.0, 7, database="tpcc-1wh")


def _begin(store: ResultsStore) -> int:
    return store.begin_run(SPEC, effective_knobs={"journal_mode": "wal"}, engine_settings={"journal_mode": "wal"},
                           load_seconds=2.5, loaded_in_run=True, load_seed=7, constants={"c_run": {"c_last": 1}},
                           environment={"host": {"kernel": "x"}}, warnings=["w1"])


def test_a_run_is_visible_while_running_and_complete_with_its_samples(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    run_id = _begin(store)
    assert store.run(run_id).status is RunStatus.RUNNING
    samples = [TxnSample(0, "new_order", 1.5, 0.002, Outcome.COMMITTED),
               TxnSample(1, "payment", 2.0, 0.001, Outcome.FAILED, 3, "busy")]
    store.finish_run(run_id, RunStatus.COMPLETE, samples, {"payment.by_name": 1}, [], 5.2, ["w2"])
    record = store.run(run_id)
    assert record.status is RunStatus.COMPLETE and record.finished_at
    assert record.spec == SPEC
    assert record.warnings == ("w1", "w2")
    assert record.load_seconds == 2.5 and record.loaded_in_run
    assert store.samples(run_id) == samples
    assert store.facts(run_id) == {"payment.by_name": 1}
    store.close()


def test_schema_is_versioned_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    ResultsStore(tmp_path / "r.db").close()
    with sqlite3.connect(tmp_path / "r.db") as db:
        assert db.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(UserError, match="upgrade Maximus"):
        ResultsStore(tmp_path / "r.db")


def test_reopening_keeps_runs(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    run_id = _begin(store)
    store.close()
    assert [r.id for r in ResultsStore(tmp_path / "r.db").runs()] == [run_id]


def test_unknown_run_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no run 9"):
        ResultsStore(tmp_path / "r.db").run(9)
