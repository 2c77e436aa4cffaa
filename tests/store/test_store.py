"""The results store: versioned schema, runs written as they start and finish, raw samples kept."""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from maximus.cli.app import app
from maximus.errors import UserError
from maximus.histograms import interval_histograms
from maximus.records import Outcome, RunSpec, RunStart, RunStatus, TxnSample, Window
from maximus.samples import OUTCOMES, RunEnd, Samples
from maximus.store import ResultsStore
from maximus.store import store as store_module
from maximus.store.failures import ResultsUnavailable
from maximus.store.schema import MIGRATIONS, SCHEMA_VERSION

SPEC = RunSpec("sqlite", {"journal_mode": "wal"}, "tpcc", {"warehouses": 1, "keying": False, "mix": "deck"}, 2, 1.0,
               4.0, 7, database="tpcc-1wh")


def _begin(store: ResultsStore) -> int:
    return store.begin_run(RunStart(SPEC, effective_knobs={"journal_mode": "wal"},
                                    engine_settings={"journal_mode": "wal"}, load_seconds=2.5, loaded_in_run=True,
                                    load_seed=7, constants={"c_run": {"c_last": 1}},
                                    environment={"host": {"kernel": "x"}}, warnings=("w1",)))


def test_a_run_is_visible_while_running_and_complete_with_its_samples(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    run_id = _begin(store)
    assert store.run(run_id).status is RunStatus.RUNNING
    samples = [TxnSample(0, "new_order", 1.5, 0.002, Outcome.COMMITTED),
               TxnSample(1, "payment", 2.0, 0.001, Outcome.FAILED, 3, "busy")]
    store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, samples, {"payment.by_name": 1}, elapsed_s=5.2,
                                    warnings=("w2",)))
    record = store.run(run_id)
    assert record.status is RunStatus.COMPLETE and record.finished_at
    assert record.spec == SPEC
    assert record.warnings == ("w1", "w2")
    assert record.load_seconds == 2.5 and record.loaded_in_run
    assert store.samples(run_id) == samples
    assert store.facts(run_id) == {"payment.by_name": 1}
    store.close()


def test_the_read_side_gets_a_runs_samples_as_columns_each_a_stored_sample(tmp_path: Path) -> None:
    """``sample_columns``: every stored sample in the order of its start, one array per field, the transaction and
    the outcome as indexes, a closed-loop sample's missing intended start as NaN; ``rows`` gives them back."""
    store = ResultsStore(tmp_path / "r.db")
    run_id, empty = _begin(store), _begin(store)
    samples = [TxnSample(1, "payment", 2.0, 0.001, Outcome.FAILED, 3, intended=1.75),
               TxnSample(0, "new_order", 1.5, 0.002, Outcome.COMMITTED),
               TxnSample(2, "new_order", 3.0, 0.25, Outcome.ROLLED_BACK, intended=2.5)]
    store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, samples))
    store.finish_run(empty, RunEnd(RunStatus.COMPLETE, []))
    columns = store.sample_columns(run_id)
    assert sorted(columns.names) == ["new_order", "payment"] and len(columns) == 3
    assert columns.start.tolist() == [1.5, 2.0, 3.0] and columns.terminal.tolist() == [0, 1, 2]
    assert [columns.names[n] for n in columns.transaction] == ["new_order", "payment", "new_order"]
    assert [OUTCOMES[n] for n in columns.outcome] == [Outcome.COMMITTED, Outcome.FAILED, Outcome.ROLLED_BACK]
    assert columns.attempts.tolist() == [1, 3, 1] and columns.latency.tolist() == [0.002, 0.001, 0.25]
    assert math.isnan(columns.intended[0]) and columns.intended[1:].tolist() == [1.75, 2.5]
    made = Samples.of(samples)  # the driver's samples in memory, as columns: the same
    assert made.names == ("new_order", "payment") and columns.names == ("new_order", "payment")
    for field in ("transaction", "terminal", "start", "latency", "outcome", "attempts", "intended"):
        np.testing.assert_array_equal(getattr(made, field), getattr(columns, field))
    assert columns.counts(columns.completed()) == {"new_order": 2}
    assert len(store.sample_columns(empty)) == 0 and store.sample_columns(empty).names == ()
    store.close()


def _mixed_samples(count: int) -> list[TxnSample]:
    """Samples of every outcome, some with an error text or an intended start, some starting together."""
    return [TxnSample(n % 3, ("payment", "new_order", "delivery")[n % 5 % 3], 0.5 * (n - n % 2), 0.001 * n,
                      list(Outcome)[n % 4], 1 + n % 2, "deadlock" if n % 4 == 2 else "",
                      0.5 * n - 0.1 if n % 3 else None) for n in range(count)]


def test_a_runs_columns_are_stored_a_part_at_a_time_each_its_samples(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's columns (``Samples``, their error texts with them) are stored as the records they were, however
    many parts of sample_columns they take; only the transactions they have are named, in the order of their names
    (as a run stored in rows reads back)."""
    monkeypatch.setattr(store_module, "SAMPLES_A_PART", 2)
    samples = _mixed_samples(7)
    store = ResultsStore(tmp_path / "r.db")
    run_id = _begin(store)
    made = Samples.of(samples)
    store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, dataclasses.replace(made, names=(*made.names, "unused"))))
    assert store.samples(run_id) == samples
    columns = store.sample_columns(run_id)
    assert columns.names == ("delivery", "new_order", "payment") and columns.error is None
    assert [columns.names[code] for code in columns.transaction] == [sample.transaction for sample in samples]
    with sqlite3.connect(tmp_path / "r.db") as db:
        assert db.execute("SELECT part, samples FROM sample_columns WHERE run_id = ? ORDER BY part",
                          (run_id,)).fetchall() == [(0, 2), (1, 2), (2, 2), (3, 1)]
        assert db.execute("SELECT sample, error FROM sample_errors ORDER BY sample").fetchall() == [
            (2, "deadlock"), (6, "deadlock")]
        assert db.execute("SELECT COUNT(*) FROM txn_samples").fetchone() == (0,)
    store.close()


def _stored_as_rows(db: sqlite3.Connection, run_id: int, samples: list[TxnSample]) -> None:
    """A run's samples as Maximus stored them before version 12: one txn_samples row each."""
    db.executemany("INSERT INTO txn_samples (run_id, terminal, transaction_name, start, latency, outcome, attempts,"
                   " error, intended) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [(run_id, s.terminal, s.transaction, s.start, s.latency, s.outcome.value, s.attempts, s.error,
                     s.intended) for s in samples])


def test_a_run_stored_in_rows_before_columns_reads_as_one_stored_in_columns(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A results database's older runs keep their txn_samples rows: their columns, records and headline counts are
    those of the same samples stored as columns, read a part at a time."""
    monkeypatch.setattr(store_module, "SAMPLES_A_PART", 3)
    # each start its own: rows read back ordered by start alone, so samples starting together could come in any order
    samples = [dataclasses.replace(sample, start=0.5 * n) for n, sample in enumerate(_mixed_samples(40))]
    store = ResultsStore(tmp_path / "r.db")
    in_columns, in_rows, empty = _begin(store), _begin(store), _begin(store)
    store.finish_run(in_columns, RunEnd(RunStatus.COMPLETE, samples, window=Window(2.0, 15.0)))
    store.finish_run(in_rows, RunEnd(RunStatus.COMPLETE, [], window=Window(2.0, 15.0)))
    store.finish_run(empty, RunEnd(RunStatus.COMPLETE, [], window=Window(2.0, 15.0)))
    with sqlite3.connect(tmp_path / "r.db") as db:
        _stored_as_rows(db, in_rows, samples)
        db.execute("UPDATE runs SET reading = json_object('presentation', json_object('headline',"
                   " json_object('transaction', 'new_order')))")
    new, old = store.sample_columns(in_columns), store.sample_columns(in_rows)
    assert new.names == old.names == ("delivery", "new_order", "payment")
    for field in ("transaction", "terminal", "start", "latency", "outcome", "attempts", "intended"):
        np.testing.assert_array_equal(getattr(new, field), getattr(old, field))
        assert getattr(new, field).dtype == getattr(old, field).dtype and getattr(new, field).flags.writeable
    assert store.samples(in_columns) == store.samples(in_rows) == samples
    expected = sum(s.transaction == "new_order" and s.outcome in (Outcome.COMMITTED, Outcome.ROLLED_BACK)
                   and Window(2.0, 15.0).contains(s) for s in samples)
    assert expected > 0
    assert store.completions_in_window() == {in_columns: expected, in_rows: expected, empty: 0}
    store.close()


def test_a_runs_response_time_histograms_are_stored_and_read_back(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    samples = [TxnSample(0, "new_order", 1.5, 0.002, Outcome.COMMITTED, intended=1.4),
               TxnSample(0, "new_order", 3.5, 0.004, Outcome.COMMITTED, intended=3.5)]
    histograms = interval_histograms(samples, Window(1.0, 5.0))
    stored, without = _begin(store), _begin(store)
    store.finish_run(stored, RunEnd(RunStatus.COMPLETE, samples, window=Window(1.0, 5.0), histograms=histograms))
    store.finish_run(without, RunEnd(RunStatus.COMPLETE, samples, window=Window(1.0, 5.0)))  # as runs stored before
    assert store.latency_histograms(stored) == histograms and len(histograms) == 4  # 2 seconds x latency, service
    assert store.latency_histograms(without) is None  # its figures come from its samples, read as columns
    assert interval_histograms(store.sample_columns(without), Window(1.0, 5.0)) == histograms
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


def _schema_of_version(db: sqlite3.Connection, version: int) -> None:
    """The tables of a results database of schema ``version``, as the Maximus of that version made them."""
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for statements in MIGRATIONS[:version]:
        for statement in statements:
            db.execute(statement)
    db.execute("INSERT INTO schema_version VALUES (?)", (version,))


def _version_5_database(path: Path) -> None:
    """A results database as Maximus wrote it before workload settings were stored generically: TPC-C's
    warehouses, keying and mix in columns of their own, one keyed run of 2 warehouses with one New-Order."""
    with sqlite3.connect(path) as db:
        _schema_of_version(db, 5)
        db.execute("""INSERT INTO runs (id, started_at, finished_at, status, engine, workload, warehouses, terminals,
                      warmup_s, duration_s, seed, keying_and_think, mix, knobs, effective_knobs, engine_settings,
                      database, load_seconds, loaded_in_run, load_seed, constants, environment, window_start,
                      window_end, elapsed_s, options)
                      VALUES (4, '2026-01-01T00:00:00+00:00', '2026-01-01T00:01:00+00:00', 'complete', 'sqlite',
                      'tpcc', 2, 3, 0.0, 60.0, 7, 1, 'deck', '{}', '{}', '{}', 'tpcc-2wh', 2.5, 1, 7, '{}',
                      '{}', 0.0, 60.0, 60.0, '{}')""")
        db.execute("INSERT INTO txn_samples VALUES (4, 0, 'new_order', 1.0, 0.01, 'committed', 1, '')")


def _version_11_database(path: Path, samples: list[TxnSample]) -> None:
    """A results database as Maximus wrote it before samples were columns: run 1's samples in txn_samples rows."""
    with sqlite3.connect(path) as db:
        _schema_of_version(db, 11)
    store = ResultsStore.__new__(ResultsStore)  # the runs row as this Maximus writes it, in the old schema
    store.path, store._db = path, sqlite3.connect(path)
    run_id = _begin(store)
    with store._db as db:
        db.execute("UPDATE runs SET status = 'complete', window_start = 0, window_end = 100, reading ="
                   " json_object('presentation', json_object('headline', json_object('transaction', 'new_order')))")
        _stored_as_rows(db, run_id, samples)
    store.close()


def _read_only_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every results database opened read-only, as a file its user may not write (root may write any file)."""
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda path, **options: connect(f"file:{path}?mode=ro", uri=True,
                                                                            **options))


def test_a_read_only_database_of_the_version_before_columns_is_read_as_it_is(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """An archive of runs stored in rows, which this Maximus cannot migrate, reads as a writable one does once
    migrated: the version after it only added tables. An older one still needs its migration, in one line."""
    samples = [dataclasses.replace(sample, start=0.5 * n) for n, sample in enumerate(_mixed_samples(30))]
    _version_11_database(tmp_path / "old.db", samples)
    _version_5_database(tmp_path / "older.db")
    _read_only_connections(monkeypatch)
    store = ResultsStore(tmp_path / "old.db")
    assert store.samples(1) == samples and len(store.sample_columns(1)) == 30
    expected = sum(s.transaction == "new_order" and s.outcome in (Outcome.COMMITTED, Outcome.ROLLED_BACK)
                   for s in samples)
    assert store.completions_in_window() == {1: expected}
    store.close()
    with pytest.raises(ResultsUnavailable, match="cannot be written"):
        ResultsStore(tmp_path / "older.db")
    monkeypatch.undo()
    with sqlite3.connect(tmp_path / "old.db") as db:
        assert db.execute("SELECT version FROM schema_version").fetchone() == (11,)


def test_an_outcome_this_maximus_does_not_know_is_one_line_where_a_sample_has_it(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    run_id = _begin(store)
    store.finish_run(run_id, RunEnd(RunStatus.COMPLETE, [TxnSample(0, "new_order", 1.0, 0.01, Outcome.COMMITTED)]))
    with sqlite3.connect(tmp_path / "r.db") as db:  # as a later Maximus might store them: one more, unused
        db.execute("UPDATE sample_columns SET outcome_names = json_insert(outcome_names, '$[#]', 'timed_out')")
    assert [sample.outcome for sample in store.samples(run_id)] == [Outcome.COMMITTED]
    with sqlite3.connect(tmp_path / "r.db") as db:  # and used by the sample
        db.execute("UPDATE sample_columns SET outcome_names = json_set(outcome_names, '$[0]', 'timed_out')")
    with pytest.raises(UserError, match=r"run 1 was stored with outcomes this Maximus does not know \(timed_out\)"):
        store.sample_columns(run_id)
    store.close()


def test_a_version_5_database_is_upgraded_with_its_runs_workload_settings(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _version_5_database(path)
    store = ResultsStore(path)
    record = store.run(4)
    store.close()
    assert record.spec.workload == "tpcc"
    assert record.spec.settings == {"warehouses": 2, "keying": True, "mix": "deck"}
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    assert "workload_settings" in columns and not {"warehouses", "keying_and_think", "mix"} & columns
    shown = CliRunner().invoke(app, ["show", "4", "--results", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "2 warehouse(s)" in shown.output and "TPC-C-like" not in shown.output  # keyed: TPC-C
    exported = CliRunner().invoke(app, ["export", "--run", "4", "--format", "csv", "--results", str(path)])
    row = next(csv.DictReader(io.StringIO(exported.output)))
    assert (row["warehouses"], row["keying"], row["mix"], row["tpmc"]) == ("2", "True", "deck", "1")


def _open_when_released(path: str, barrier) -> None:
    barrier.wait()
    ResultsStore(Path(path)).close()


def test_processes_that_open_a_new_results_database_together_all_get_it(tmp_path: Path) -> None:
    """Each migrates in one locked transaction: before, two that found no tables both created them, and the
    second failed on "table runs already exists"."""
    context = multiprocessing.get_context("fork")
    for attempt in range(8):
        path = tmp_path / f"new-{attempt}.db"
        barrier = context.Barrier(4)
        processes = [context.Process(target=_open_when_released, args=(str(path), barrier)) for _ in range(4)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
        assert [p.exitcode for p in processes] == [0] * 4, f"attempt {attempt}"
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
