"""Writes runs as they happen and reads them back as frozen records.

A run row is written when the run starts (status ``running``) and completed when it ends, with its
raw samples; an interrupted run keeps everything measured up to the interruption.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import os
import socket
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from maximus import limits
from maximus.errors import UserError
from maximus.environment import boot_id
from maximus.locks import unusable_directory
from maximus.pids import start_time
from maximus.records import (CheckResult, CrashMode, CrashTest, CrashTestRecord, DeferredResult, DeviceJob, DeviceLimit,
                             DurabilityFindings, ExperimentRecord, IntervalHistogram, OUTCOME_OF, Outcome,
                             RunRecord, RunSpec, RunStart, RunStatus, TxnSample, Verdict, Window, WorkloadReading)
from maximus.records import MetricSample
from maximus.samples import (CODE_OF_OUTCOME, COLUMN_TYPES, COMPLETED, OUTCOMES, RunEnd, Samples, samples_of)
from maximus.store.failures import ResultsUnavailable, guarded, results_timeout
from maximus.store.schema import READABLE_UNMIGRATED, SCHEMA_VERSION, migrate


def default_results_path() -> Path:
    """``$MAXIMUS_RESULTS``, else ``$XDG_DATA_HOME/maximus/results.db`` (``~/.local/share/...``)."""
    if os.environ.get("MAXIMUS_RESULTS"):
        return Path(os.environ["MAXIMUS_RESULTS"])
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data_home / "maximus" / "results.db"


ORPHANED = "the Maximus that ran it ended without finishing it (killed, or the machine restarted)"
NOT_FINITE = "stored with a warm-up or duration that is not a finite number of seconds: nothing in it is counted"
# A run's samples are stored when it ends: one whose runner died stored none, so its window measured nothing
# ("0 s of 60 s measured"), rather than the seconds it planned at a tpmC of 0.
_NOTHING_MEASURED = "window_end = window_start"
# Of a run's samples in one row of sample_columns: SQLite makes a row's whole record in memory as it stores it, 37 MiB
# for a part of this many (a float column's 8 MiB)
SAMPLES_A_PART = 1 << 20
# Each column of ``Samples`` as sample_columns stores it: its SQL column and its type, little-endian on any machine,
# so that a results database read elsewhere reads the same
_STORED_COLUMN: Mapping[str, str] = {"transaction": "transaction_code", "terminal": "terminal", "start": "start",
                                     "latency": "latency", "outcome": "outcome_code", "attempts": "attempts",
                                     "intended": "intended"}
_STORED_TYPE: Mapping[str, np.dtype] = {field: np.dtype(kind).newbyteorder("<") for field, kind in COLUMN_TYPES.items()}
_SAMPLE_COLUMNS = np.dtype(list(COLUMN_TYPES.items()))  # a NULL intended start (a closed loop's) reads as NaN
_COMPLETED_NAMES = frozenset(outcome.value for outcome in COMPLETED)


def _this_runner() -> str | None:
    """This process, as ``_runner_alive`` can tell it apart from a later one with the same pid."""
    boot, start = boot_id(), start_time(os.getpid())
    return json.dumps({"host": socket.gethostname(), "boot": boot, "pid": os.getpid(), "start": start}) \
        if boot and start else None


def _runner_alive(runner: str) -> bool | None:
    """Whether the process that began a run still runs; None when this machine cannot tell (another host)."""
    try:
        known = json.loads(runner)
    except ValueError:
        return None
    boot = boot_id()
    if known.get("host") != socket.gethostname() or boot is None:
        return None
    return known.get("boot") == boot and start_time(int(known["pid"])) == known.get("start")


def _storable(number: int) -> bool:
    """Whether a run or experiment number can be in the store at all: SQLite's integers end at 2^63 - 1."""
    return 0 < number <= limits.LARGEST_INTEGER


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ResultsStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        timeout = results_timeout()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"cannot open the results database {self.path}: "
                            f"{unusable_directory(self.path.parent, error)}") from None
        if self.path.is_dir():
            raise UserError(f"cannot open the results database {self.path}: it is a directory")
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout)
        except sqlite3.Error as error:
            raise UserError(f"cannot open the results database {self.path}: {error}") from None
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise

    @guarded
    def _open(self) -> None:
        self._recognise()
        self._columns = True  # whether it has sample_columns: a read-only store of READABLE_UNMIGRATED has not
        version = self._version()
        if version != SCHEMA_VERSION:  # a store up to date is not written to: it may be read-only
            try:
                migrate(self._db)
            except sqlite3.OperationalError as error:
                if not _read_only(error) or version is None or not READABLE_UNMIGRATED <= version < SCHEMA_VERSION:
                    raise
                self._columns = False  # read as it is: its runs are in txn_samples, and nothing is stored in it
        self._close_orphans()

    def _recognise(self) -> None:
        """Maximus's own results database, or an empty file, and never another application's SQLite file: that
        would get Maximus's tables written into it."""
        tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables - {"schema_version"} and not {"schema_version", "runs"} <= tables:
            listed = ", ".join(sorted(tables)[:4]) + (", ..." if len(tables) > 4 else "")
            raise ResultsUnavailable(f"{self.path} is not a Maximus results database (it has the tables {listed}): "
                                     "choose another --results", 2)

    def _version(self) -> int | None:
        try:
            row = self._db.execute("SELECT version FROM schema_version").fetchone()
        except sqlite3.OperationalError:  # no such table: a new store
            return None
        return row[0] if row else None

    def _close_orphans(self) -> None:
        """Runs left ``running`` by a Maximus of this machine that is gone (killed, or the machine restarted)
        are ``interrupted``: a dead runner's run would otherwise look under way, with no figures, for good."""
        rows = self._db.execute("SELECT id, runner FROM runs WHERE status = ? AND runner IS NOT NULL",
                                (RunStatus.RUNNING.value,)).fetchall()
        orphans = [run_id for run_id, runner in rows if _runner_alive(runner) is False]
        self.orphaned = tuple(orphans)  # what this opening marked interrupted
        if not orphans:
            return
        try:
            with self._db:
                self._db.executemany(f"UPDATE runs SET status = ?, finished_at = ?, errors = ?, {_NOTHING_MEASURED}"
                                     " WHERE id = ?", ((RunStatus.INTERRUPTED.value, _now(), json.dumps([ORPHANED]),
                                                        run_id) for run_id in orphans))
        except sqlite3.OperationalError:  # a store we may only read: its runs are shown as they were left
            pass

    def close(self) -> None:
        self._db.close()

    @guarded
    def check_writable(self) -> None:
        """Fail now, not after a build and a run, when this store cannot take a run: read-only, or kept locked by
        another process. The write is rolled back: the file does not change."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("UPDATE schema_version SET version = version")
        finally:
            self._db.rollback()

    @guarded
    def begin_run(self, start: RunStart) -> int:
        spec = start.spec
        window = Window(spec.warmup_s, spec.warmup_s + spec.duration_s)
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO runs (started_at, status, engine, workload, workload_settings, terminals, warmup_s,"
                " duration_s, seed, knobs, effective_knobs, engine_settings, database, load_seconds, loaded_in_run,"
                " load_seed, constants, environment, warnings, window_start, window_end, experiment_id, plan_key,"
                " options, runner, reading)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (_now(), RunStatus.RUNNING.value, spec.engine, spec.workload, json.dumps(dict(spec.settings)),
                 spec.terminals, spec.warmup_s, spec.duration_s, spec.seed, json.dumps(dict(spec.knobs)),
                 json.dumps(dict(start.effective_knobs)), json.dumps(dict(start.engine_settings)),
                 spec.database, start.load_seconds, int(start.loaded_in_run), start.load_seed,
                 json.dumps(dict(start.constants)), json.dumps(dict(start.environment)),
                 json.dumps(list(start.warnings)), window.start, window.end, start.experiment_id, start.plan_key,
                 json.dumps(dict(spec.options)), _this_runner(), _reading_text(start.reading)))
        return _row_id(cursor)

    @guarded
    def finish_run(self, run_id: int, end: RunEnd) -> None:
        """Store the raw samples and close the run, in one transaction: all of it lands or none. ``end.window``,
        when given, replaces the planned one: an interrupted run measured less than it planned."""
        status, samples, facts, errors, elapsed_s, warnings, window, deferred = (
            end.status, end.samples, end.facts, end.errors, end.elapsed_s, end.warnings, end.window, end.deferred)
        with self._db:
            self._db.executemany(
                "INSERT INTO deferred_results (run_id, terminal, transaction_name, queued, completed, outcome, record)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((run_id, r.terminal, r.transaction, r.queued, r.completed, r.outcome.value,
                  None if r.record is None else json.dumps(r.record)) for r in deferred))
            if window is not None:
                self._db.execute("UPDATE runs SET window_start = ?, window_end = ? WHERE id = ?",
                                 (window.start, window.end, run_id))
            columns = _named_as_stored(samples_of(samples))
            self._db.executemany(
                f"INSERT INTO sample_columns (run_id, part, samples, transaction_names, outcome_names, "
                f"{', '.join(_STORED_COLUMN.values())}) VALUES ({', '.join('?' * (5 + len(_STORED_COLUMN)))})",
                _sample_parts(run_id, columns))
            self._db.executemany("INSERT INTO sample_errors (run_id, sample, error) VALUES (?, ?, ?)",
                                 _sample_errors(run_id, columns))
            self._db.executemany("INSERT INTO run_facts (run_id, name, value) VALUES (?, ?, ?)",
                                 ((run_id, name, value) for name, value in facts.items()))
            self._db.executemany(
                "INSERT INTO latency_histograms (run_id, transaction_name, kind, start, counted, histogram)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                ((run_id, h.transaction, h.kind, h.start, int(h.counted), h.encoded) for h in end.histograms))
            old_warnings, old_environment = self._db.execute("SELECT warnings, environment FROM runs WHERE id = ?",
                                                             (run_id,)).fetchone()
            environment = json.loads(old_environment) | dict(end.environment)
            self._db.execute("UPDATE runs SET status = ?, finished_at = ?, errors = ?, elapsed_s = ?, warnings = ?,"
                             " environment = ? WHERE id = ?",
                             (status.value, _now(), json.dumps(list(errors)), elapsed_s,
                              json.dumps(json.loads(old_warnings) + list(warnings)), json.dumps(environment), run_id))

    @guarded
    def fail_run(self, run_id: int, cause: str) -> None:
        """A run stored as complete that a later look found broken (its consistency check met a fault): failed,
        with the cause as its first error."""
        with self._db:
            errors = json.loads(self._db.execute("SELECT errors FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
                                or "[]")
            self._db.execute("UPDATE runs SET status = ?, errors = ? WHERE id = ?",
                             (RunStatus.FAILED.value, json.dumps([cause, *errors]), run_id))

    @guarded
    def add_consistency(self, run_id: int, results: Iterable[Any]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO consistency (run_id, condition, clause, description, passed, detail)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                ((run_id, r.condition, r.clause, r.description, None if r.passed is None else int(r.passed),
                  r.detail) for r in results))

    @guarded
    def runs(self, experiment_id: int | None = None) -> list[RunRecord]:
        if experiment_id is None:
            return [self._record(row) for row in self._db.execute(f"{_SELECT_RUN} ORDER BY id")]
        rows = self._db.execute(f"{_SELECT_RUN} WHERE experiment_id = ? ORDER BY id", (experiment_id,))
        return [self._record(row) for row in rows]

    @guarded
    def create_experiment(self, name: str, source_path: str, source_text: str, plan: Any) -> int:
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO experiments (name, created_at, source_path, source_text, plan, status)"
                " VALUES (?, ?, ?, ?, ?, 'running')", (name, _now(), source_path, source_text, json.dumps(plan)))
        return _row_id(cursor)

    @guarded
    def runs_without_option(self, name: str) -> list[tuple[int, str]]:
        """(run, engine) of the runs whose options lack ``name``: one query, not every run read whole."""
        rows = self._db.execute("SELECT id, engine FROM runs WHERE json_extract(coalesce(options, '{}'), ?) IS NULL",
                                (f"$.{name}",))
        return [(run_id, engine) for run_id, engine in rows]

    @guarded
    def keep_run_option(self, name: str, values: Mapping[int, str]) -> None:
        """Add an option to runs stored before Maximus kept it (run -> its value), in one transaction."""
        with self._db:
            self._db.executemany("UPDATE runs SET options = json_set(coalesce(options, '{}'), ?, ?) WHERE id = ?",
                                 ((f"$.{name}", value, run_id) for run_id, value in values.items()))

    @guarded
    def runs_without_reading(self) -> list[RunRecord]:
        """The runs stored before Maximus kept how to read them (``RunRecord.reading``): one query."""
        return [self._record(row) for row in self._db.execute(f"{_SELECT_RUN} WHERE reading IS NULL ORDER BY id")]

    @guarded
    def keep_run_readings(self, readings: Mapping[int, WorkloadReading]) -> None:
        """Add how to read them to runs stored before Maximus kept that (run -> its reading), in one transaction."""
        with self._db:
            self._db.executemany("UPDATE runs SET reading = ? WHERE id = ?",
                                 ((_reading_text(reading), run_id) for run_id, reading in readings.items()))

    @guarded
    def keep_in_plan(self, experiment_id: int, entry: str, value: Mapping[str, Any]) -> None:
        """Add an entry (the resolved model, how to read its runs) to the plan of an experiment stored before
        Maximus kept it there."""
        with self._db:
            row = self._db.execute("SELECT plan FROM experiments WHERE id = ?", (experiment_id,)).fetchone()
            plan = json.loads(row[0]) | {entry: dict(value)}
            self._db.execute("UPDATE experiments SET plan = ? WHERE id = ?", (json.dumps(plan), experiment_id))

    @guarded
    def finish_experiment(self, experiment_id: int) -> None:
        with self._db:
            self._db.execute("UPDATE experiments SET status = 'complete', finished_at = ? WHERE id = ?",
                             (_now(), experiment_id))

    @guarded
    def experiments(self) -> list[ExperimentRecord]:
        return [self._experiment(row) for row in self._db.execute(f"{_SELECT_EXPERIMENT} ORDER BY id")]

    @guarded
    def experiments_without(self, entry: str) -> list[ExperimentRecord]:
        """The experiments whose plan lacks ``entry``, stored before Maximus kept it: one query, not every plan read
        whole."""
        rows = self._db.execute(f"{_SELECT_EXPERIMENT} WHERE json_extract(plan, ?) IS NULL ORDER BY id",
                                (f"$.{entry}",))
        return [self._experiment(row) for row in rows]

    @guarded
    def experiment(self, experiment_id: int) -> ExperimentRecord:
        row = self._db.execute(f"{_SELECT_EXPERIMENT} WHERE id = ?", (experiment_id,)).fetchone() \
            if _storable(experiment_id) else None
        if row is None:
            raise UserError(f"no experiment {experiment_id} in {self.path} (see `maximus experiment list`)")
        return self._experiment(row)

    @guarded
    def abandon_stale_runs(self, experiment_id: int) -> int:
        """Runs left ``running`` by a runner that died: mark them interrupted so they are run again. The count
        includes those the opening of this store found orphaned already."""
        with self._db:
            cursor = self._db.execute(
                f"UPDATE runs SET status = ?, finished_at = ?, errors = ?, {_NOTHING_MEASURED} WHERE experiment_id = ?"
                " AND status = ?",
                (RunStatus.INTERRUPTED.value, _now(), json.dumps(["the runner stopped during this run"]),
                 experiment_id, RunStatus.RUNNING.value))
        found = self._db.execute(f"SELECT COUNT(*) FROM runs WHERE experiment_id = ? AND id IN "
                                 f"({', '.join('?' * len(self.orphaned))})", (experiment_id, *self.orphaned))
        return cursor.rowcount + found.fetchone()[0]

    @guarded
    def run(self, run_id: int) -> RunRecord:
        row = self._db.execute(f"{_SELECT_RUN} WHERE id = ?", (run_id,)).fetchone() if _storable(run_id) else None
        if row is None:
            raise UserError(f"no run {run_id} in {self.path} (see `maximus runs`)")
        return self._record(row)

    @guarded
    def samples(self, run_id: int) -> list[TxnSample]:
        """A run's samples as records, in the order of their starts, each with its error text: for a short look; the
        figures read ``sample_columns``."""
        columns = self._stored_columns(run_id)
        if columns is None:  # a run stored before its samples were kept as columns
            rows = self._db.execute("SELECT terminal, transaction_name, start, latency, outcome, attempts, error,"
                                    " intended FROM txn_samples WHERE run_id = ? ORDER BY start", (run_id,))
            return [TxnSample(t, name, s, lat, OUTCOME_OF[o], a, e, i) for t, name, s, lat, o, a, e, i in rows]
        return list(self._with_errors(run_id, columns))

    @guarded
    def sample_columns(self, run_id: int, with_errors: bool = False) -> Samples:
        """A run's samples as columns (``maximus.samples``): what the read side analyses, and, ``with_errors``, each
        sample's error text, which no figure reads. Stored so, they are read in a few blobs; a run stored before that
        has rows, whose transactions' names and outcomes come back as their indexes, so that no row makes a Python
        object but numpy's."""
        columns = self._stored_columns(run_id)
        if columns is None:
            return _named_as_stored(Samples.of(self.samples(run_id))) if with_errors else self._columns_of_rows(run_id)
        return self._with_errors(run_id, columns) if with_errors else columns

    def _with_errors(self, run_id: int, columns: Samples) -> Samples:
        errors = np.full(len(columns), "", dtype=object)
        for sample, error in self._db.execute("SELECT sample, error FROM sample_errors WHERE run_id = ?", (run_id,)):
            errors[sample] = error
        return dataclasses.replace(columns, error=errors)

    def _stored_columns(self, run_id: int) -> Samples | None:
        """The run's samples from sample_columns; None for a run that has none there (stored before them). A column
        at a time, each part copied into it as it is read: the peak is the columns and one part's blob."""
        if not self._columns:
            return None
        snapshot = not self._db.in_transaction  # every column of the same parts, while a run may be storing its own
        if snapshot:
            self._db.execute("BEGIN")
        try:
            parts = self._db.execute("SELECT samples, transaction_names, outcome_names FROM sample_columns"
                                     " WHERE run_id = ? ORDER BY part", (run_id,)).fetchall()
            if not parts:
                return None
            names, stored_outcomes = tuple(json.loads(parts[0][1])), json.loads(parts[0][2])
            counts = [count for count, _, _ in parts]
            columns = {field: self._column(run_id, field, counts) for field in _STORED_COLUMN}
        finally:
            if snapshot:
                self._db.execute("COMMIT")
        columns["outcome"] = _outcomes(stored_outcomes, columns["outcome"], run_id)
        return Samples(names, **columns)

    def _column(self, run_id: int, field: str, counts: Sequence[int]) -> np.ndarray:
        """One of a run's columns, its parts (of ``counts`` samples each) read one after the other."""
        column: np.ndarray = np.empty(sum(counts), dtype=COLUMN_TYPES[field])
        first = 0
        parts = self._db.execute(f"SELECT {_STORED_COLUMN[field]} FROM sample_columns WHERE run_id = ? ORDER BY part",
                                 (run_id,))
        for (blob,), count in zip(parts, counts):
            column[first:first + count] = np.frombuffer(blob, dtype=_STORED_TYPE[field], count=count)
            first += count
        return column

    def _columns_of_rows(self, run_id: int) -> Samples:
        snapshot = not self._db.in_transaction  # both reads see the same rows, while a run may be storing its own
        if snapshot:
            self._db.execute("BEGIN")
        try:
            names = tuple(name for (name,) in self._db.execute(
                "SELECT DISTINCT transaction_name FROM txn_samples WHERE run_id = ?", (run_id,)))
            coded = " ".join(f"WHEN ? THEN {n}" for n in range(len(names))) or "WHEN NULL THEN 0"
            outcomes = " ".join(f"WHEN '{outcome.value}' THEN {n}" for n, outcome in enumerate(OUTCOMES))
            rows = self._db.execute(f"SELECT CASE transaction_name {coded} END, terminal, start, latency, CASE outcome "
                                    f"{outcomes} END, attempts, intended FROM txn_samples WHERE run_id = ? "
                                    "ORDER BY start", (*names, run_id))
            table = np.fromiter(rows, dtype=_SAMPLE_COLUMNS)
        finally:
            if snapshot:
                self._db.execute("COMMIT")
        return Samples(names, *(table[field] for field in COLUMN_TYPES))

    @guarded
    def latency_histograms(self, run_id: int) -> list[IntervalHistogram] | None:
        """A run's response times as interval histograms; None for a run stored without them (before they were
        kept, or one that stored no samples), whose figures come from its samples."""
        rows = self._db.execute("SELECT transaction_name, kind, start, counted, histogram FROM latency_histograms"
                                " WHERE run_id = ? ORDER BY transaction_name, kind, start", (run_id,)).fetchall()
        return [IntervalHistogram(t, k, s, bool(c), h) for t, k, s, c, h in rows] or None

    @guarded
    def completions_in_window(self) -> dict[int, int]:
        """Per run, its completed (committed or rolled back) transactions of its headline's (as its stored reading
        names it), whose whole response time lies inside its window (``Window.holds``), where ``sample_columns``
        would read each run's samples whole: a few of each run's columns, and one query over the rows of the runs
        stored before them. A run without a stored reading counts none."""
        snapshot = not self._db.in_transaction  # both queries see the same runs, while a run may be storing its own
        if snapshot:
            self._db.execute("BEGIN")
        try:
            done: dict[int, int] = dict(self._db.execute(
                "SELECT r.id, count(s.run_id) FROM runs AS r LEFT JOIN txn_samples AS s ON s.run_id = r.id"
                " AND s.transaction_name = json_extract(r.reading, '$.presentation.headline.transaction')"
                " AND s.outcome IN (?, ?) AND s.start >= r.window_start AND s.start + s.latency <= r.window_end"
                " GROUP BY r.id", (Outcome.COMMITTED.value, Outcome.ROLLED_BACK.value)))
            parts = self._db.execute(
                "SELECT c.run_id, json_extract(r.reading, '$.presentation.headline.transaction'), r.window_start,"
                " r.window_end, c.transaction_names, c.outcome_names, c.transaction_code, c.start, c.latency,"
                " c.outcome_code FROM sample_columns AS c JOIN runs AS r ON r.id = c.run_id") if self._columns else ()
            for run_id, headline, window_start, window_end, names, outcomes, *columns in parts:
                done[run_id] = done.get(run_id, 0) + _completions_in_part(
                    headline, Window(window_start, window_end), json.loads(names), json.loads(outcomes), *columns)
        finally:
            if snapshot:
                self._db.execute("COMMIT")
        return done

    @guarded
    def deferred_results(self, run_id: int) -> list[DeferredResult]:
        """The run's deferred transactions as its result file records them, in the order they were queued."""
        rows = self._db.execute("SELECT terminal, transaction_name, queued, completed, outcome, record"
                                " FROM deferred_results WHERE run_id = ? ORDER BY queued, rowid", (run_id,))
        return [DeferredResult(t, name, q, c, OUTCOME_OF[o], None if r is None else json.loads(r))
                for t, name, q, c, o, r in rows]

    @guarded
    def facts(self, run_id: int) -> dict[str, int]:
        return dict(self._db.execute("SELECT name, value FROM run_facts WHERE run_id = ?", (run_id,)))

    @guarded
    def consistency(self, run_id: int) -> list[CheckResult]:
        rows = self._db.execute("SELECT condition, clause, description, passed, detail FROM consistency"
                                " WHERE run_id = ? ORDER BY condition", (run_id,))
        return [CheckResult(c, cl, d, None if p is None else bool(p), det) for c, cl, d, p, det in rows]

    @staticmethod
    def _experiment(row: tuple) -> ExperimentRecord:
        experiment_id, name, created, finished, path, text, plan, status = row
        return ExperimentRecord(experiment_id, name, created, finished, path, text, json.loads(plan), status)

    @staticmethod
    def _record(row: tuple) -> RunRecord:
        (run_id, started, finished, status, engine, workload, workload_settings, terminals, warmup, duration, seed,
         knobs, effective, settings, database, load_s, loaded, load_seed, constants, environment, warnings,
         errors, w_start, w_end, elapsed, experiment_id, plan_key, options, reading) = row
        spec = RunSpec(engine, json.loads(knobs), workload, json.loads(workload_settings), terminals, warmup, duration,
                       seed, database, json.loads(options))
        finite = all(isinstance(v, (int, float)) and math.isfinite(v) for v in (w_start, w_end))
        return RunRecord(run_id, started, finished, RunStatus(status), spec, json.loads(effective),
                         json.loads(settings), load_s, bool(loaded), load_seed, json.loads(constants),
                         json.loads(environment), tuple(json.loads(warnings)),
                         tuple(json.loads(errors)) + (() if finite else (NOT_FINITE,)),
                         Window(w_start, w_end) if finite else Window(0.0, 0.0), elapsed, experiment_id, plan_key,
                         None if reading is None else _reading(reading))

    @guarded
    def add_metric_samples(self, run_id: int, samples: Iterable[MetricSample]) -> None:
        """Store a run's raw monitoring samples (labels as JSON), in one transaction."""
        with self._db:
            self._db.executemany(
                "INSERT INTO metric_samples (run_id, time, source, name, value, unit, labels)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((run_id, s.time, s.source, s.name, s.value, s.unit, s.labels_text()) for s in samples))

    @guarded
    def metric_samples(self, run_id: int) -> list[MetricSample]:
        """A run's monitoring samples in time order; empty for an unmonitored run."""
        rows = self._db.execute("SELECT time, source, name, value, unit, labels FROM metric_samples"
                                " WHERE run_id = ? ORDER BY time, rowid", (run_id,))
        return [MetricSample(t, source, name, value, unit, json.loads(labels or "{}"))
                for t, source, name, value, unit, labels in rows]

    @guarded
    def add_crash_test(self, test: CrashTest) -> int:
        """Store one crash test, whole, in one transaction; its number."""
        findings = test.findings
        with self._db:
            cursor = self._db.execute(
                "INSERT INTO crash_tests (at, engine, knobs, workload, settings, terminals, mode, seed, verdict,"
                " acknowledged, rolled_back, lost, findings_checks, checks, recovery_s, crashed_at_s, loss_window,"
                " notes, environment, experiment_id, plan_key)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (_now(), test.engine, json.dumps(dict(test.knobs)), test.workload, json.dumps(dict(test.settings)),
                 test.terminals, test.mode.value, test.seed, test.verdict.value, findings.acknowledged,
                 findings.rolled_back, json.dumps(list(findings.lost)), _checks_text(findings.checks),
                 _checks_text(test.checks), test.recovery_s, test.crashed_at_s, test.window,
                 json.dumps(list(test.notes)), json.dumps(dict(test.environment)), test.experiment_id,
                 test.plan_key))
        return _row_id(cursor)

    @guarded
    def crash_tests(self, experiment_id: int | None = None,
                    ids: Sequence[int] | None = None) -> list[CrashTestRecord]:
        """The stored crash tests in the order they were stored: all of them, or those of one experiment, or those
        numbered ``ids`` (both given: those of the experiment among ``ids``)."""
        conditions: list[str] = []
        parameters: list[int] = []
        if experiment_id is not None:
            conditions.append("experiment_id = ?")
            parameters.append(experiment_id)
        if ids is not None:
            wanted = [test_id for test_id in ids if _storable(test_id)]
            conditions.append(f"id IN ({', '.join('?' * len(wanted))})")
            parameters += wanted
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        rows = self._db.execute(f"{_SELECT_CRASH_TEST}{where} ORDER BY id", parameters)
        return [_crash_test(row) for row in rows]


    @guarded
    def add_device_limit(self, run_id: int, limit: DeviceLimit) -> None:
        """What fio measured beside run ``run_id``, its JSON whole."""
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO device_limits (run_id, job, directory, iops, bytes_per_s, latency_p50_us,"
                " latency_p99_us, output) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, json.dumps(dataclasses.asdict(limit.job)), limit.directory, limit.iops, limit.bytes_per_s,
                 limit.latency_p50_us, limit.latency_p99_us, json.dumps(dict(limit.output))))

    @guarded
    def device_limit(self, run_id: int) -> DeviceLimit | None:
        """The device's limit stored with run ``run_id``, or None (not a storage-bound run)."""
        row = self._db.execute("SELECT job, directory, iops, bytes_per_s, latency_p50_us, latency_p99_us, output"
                               " FROM device_limits WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        job, directory, iops, bytes_per_s, p50, p99, output = row
        return DeviceLimit(DeviceJob(**json.loads(job)), directory, iops, bytes_per_s, p50, p99, json.loads(output))


_SELECT_CRASH_TEST = ("SELECT id, at, engine, knobs, workload, settings, terminals, mode, seed, verdict, acknowledged,"
                      " rolled_back, lost, findings_checks, checks, recovery_s, crashed_at_s, loss_window, notes,"
                      " environment, experiment_id, plan_key FROM crash_tests")


def _crash_test(row: tuple) -> CrashTestRecord:
    (test_id, at, engine, knobs, workload, settings, terminals, mode, seed, verdict, acknowledged, rolled_back, lost,
     findings_checks, checks, recovery_s, crashed_at_s, window, notes, environment, experiment_id, plan_key) = row
    findings = DurabilityFindings(acknowledged, rolled_back, tuple(json.loads(lost)), _checks(findings_checks))
    return CrashTestRecord(test_id, at, CrashTest(
        engine, json.loads(knobs), workload, json.loads(settings), terminals, CrashMode(mode), seed, Verdict(verdict),
        findings, _checks(checks), recovery_s, crashed_at_s, window, tuple(json.loads(notes)), json.loads(environment),
        experiment_id, plan_key))


def _checks_text(checks: Iterable[CheckResult]) -> str:
    """Checks as a JSON list of objects named by CheckResult's fields: readable with sqlite3 alone."""
    return json.dumps([dataclasses.asdict(check) for check in checks])


def _checks(text: str) -> tuple[CheckResult, ...]:
    return tuple(CheckResult(**fields) for fields in json.loads(text))


_SELECT_RUN = ("SELECT id, started_at, finished_at, status, engine, workload, workload_settings, terminals, warmup_s,"
               " duration_s, seed, knobs, effective_knobs, engine_settings, database,"
               " load_seconds, loaded_in_run, load_seed, constants, environment, warnings, errors, window_start,"
               " window_end, elapsed_s, experiment_id, plan_key, options, reading FROM runs")
_SELECT_EXPERIMENT = ("SELECT id, name, created_at, finished_at, source_path, source_text, plan, status"
                      " FROM experiments")


@functools.lru_cache(maxsize=64)
def _reading(text: str) -> WorkloadReading:
    """A run's stored reading, parsed once per text: the runs of one workload and settings share it, and ``maximus
    runs`` reads a thousand of them."""
    return WorkloadReading.from_data(json.loads(text))


def _reading_text(reading: WorkloadReading | None) -> str | None:
    return None if reading is None else json.dumps(reading.to_data())


def _row_id(cursor: sqlite3.Cursor) -> int:
    """The id of the row an INSERT just wrote (sqlite3 says None only where no row was inserted)."""
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _named_as_stored(samples: Samples) -> Samples:
    """``samples`` naming only the transactions they have, in the order of their names: as a run stored before its
    samples were columns reads back (``ResultsStore._columns_of_rows``), so that both read the same."""
    used = np.flatnonzero(np.bincount(samples.transaction, minlength=len(samples.names))).tolist()
    names = tuple(sorted(samples.names[code] for code in used))
    if names == samples.names:
        return samples
    recoded = np.zeros(len(samples.names), dtype=np.int32)
    recoded[used] = [names.index(samples.names[code]) for code in used]
    return dataclasses.replace(samples, names=names, transaction=recoded[samples.transaction])


def _sample_parts(run_id: int, samples: Samples) -> Iterator[tuple]:
    """The rows of sample_columns that hold ``samples``, each column's part handed to SQLite as the array's own
    bytes (a little-endian machine's need no copy), in ``_STORED_COLUMN``'s order, as the INSERT names them."""
    names, outcomes = json.dumps(samples.names), json.dumps([outcome.value for outcome in OUTCOMES])
    for part, first in enumerate(range(0, len(samples), SAMPLES_A_PART)):
        piece = slice(first, first + SAMPLES_A_PART)
        columns = (np.ascontiguousarray(getattr(samples, field)[piece], dtype=_STORED_TYPE[field]).data
                   for field in _STORED_COLUMN)
        yield run_id, part, len(samples.start[piece]), names, outcomes, *columns


def _sample_errors(run_id: int, samples: Samples) -> Iterator[tuple]:
    """The rows of sample_errors: each sample with an error text, by its place in the run's samples."""
    if samples.error is None:
        return
    erred = np.flatnonzero(samples.error != "")
    yield from zip(itertools.repeat(run_id), erred.tolist(), samples.error[erred].tolist())


def _read_only(error: sqlite3.Error) -> bool:
    return (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF == sqlite3.SQLITE_READONLY


def _outcomes(stored: Sequence[str], codes: np.ndarray, run_id: int) -> np.ndarray:
    """A run's outcome codes as stored (indexes into ``stored``, its outcomes' names) as this Maximus's
    (``OUTCOMES``): a name it does not know is an error only where a sample has it."""
    mapped = np.array([CODE_OF_OUTCOME.get(name, -1) for name in stored], dtype=np.int8)[codes]
    if (mapped < 0).any():
        unknown = sorted({stored[code] for code in np.unique(codes[mapped < 0]).tolist()})
        raise UserError(f"run {run_id} was stored with outcomes this Maximus does not know ({', '.join(unknown)}): "
                        "read it with the Maximus that stored it")
    return mapped


def _completions_in_part(headline: str | None, window: Window, names: Sequence[str], outcomes: Sequence[str],
                         transaction: bytes, start: bytes, latency: bytes, outcome: bytes) -> int:
    """How many of a part's samples are completed transactions of ``headline`` inside ``window``."""
    if headline not in names:
        return 0
    starts = _column(start, "start")
    completed = [code for code, name in enumerate(outcomes) if name in _COMPLETED_NAMES]
    counted = ((_column(transaction, "transaction") == names.index(headline))
               & np.isin(_column(outcome, "outcome"), completed)
               & (starts >= window.start) & (starts + _column(latency, "latency") <= window.end))
    return int(np.count_nonzero(counted))


def _column(blob: bytes, field: str) -> np.ndarray:
    return np.frombuffer(blob, dtype=_STORED_TYPE[field])
