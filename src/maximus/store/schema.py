"""The results database's schema, versioned: each migration moves it one version up."""

from __future__ import annotations

import sqlite3

from maximus.errors import UserError

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # version 1
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
            engine TEXT NOT NULL, workload TEXT NOT NULL, warehouses INTEGER NOT NULL,
            terminals INTEGER NOT NULL, warmup_s REAL NOT NULL, duration_s REAL NOT NULL, seed INTEGER NOT NULL,
            keying_and_think INTEGER NOT NULL, mix TEXT NOT NULL, knobs TEXT NOT NULL,
            effective_knobs TEXT NOT NULL, engine_settings TEXT NOT NULL, database TEXT NOT NULL,
            load_seconds REAL, loaded_in_run INTEGER NOT NULL, load_seed INTEGER, constants TEXT NOT NULL,
            environment TEXT NOT NULL, warnings TEXT NOT NULL DEFAULT '[]', errors TEXT NOT NULL DEFAULT '[]',
            window_start REAL NOT NULL, window_end REAL NOT NULL, elapsed_s REAL)""",
        """CREATE TABLE txn_samples (
            run_id INTEGER NOT NULL REFERENCES runs(id), terminal INTEGER NOT NULL, transaction_name TEXT NOT NULL,
            start REAL NOT NULL, latency REAL NOT NULL, outcome TEXT NOT NULL, attempts INTEGER NOT NULL,
            error TEXT NOT NULL DEFAULT '')""",
        "CREATE INDEX txn_samples_by_run ON txn_samples (run_id, transaction_name)",
        """CREATE TABLE run_facts (
            run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, value INTEGER NOT NULL,
            PRIMARY KEY (run_id, name))""",
        """CREATE TABLE consistency (
            run_id INTEGER NOT NULL REFERENCES runs(id), condition INTEGER NOT NULL, clause TEXT NOT NULL,
            description TEXT NOT NULL, passed INTEGER, detail TEXT NOT NULL, PRIMARY KEY (run_id, condition))""",
    ),
    (  # version 2: experiments, and metrics sampled during runs
        """CREATE TABLE experiments (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL, finished_at TEXT,
            source_path TEXT NOT NULL, source_text TEXT NOT NULL, plan TEXT NOT NULL, status TEXT NOT NULL)""",
        "ALTER TABLE runs ADD COLUMN experiment_id INTEGER REFERENCES experiments(id)",
        "ALTER TABLE runs ADD COLUMN plan_key TEXT",
        "CREATE INDEX runs_by_experiment ON runs (experiment_id, plan_key)",
        """CREATE TABLE metric_samples (
            run_id INTEGER NOT NULL REFERENCES runs(id), time REAL NOT NULL, source TEXT NOT NULL,
            name TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL DEFAULT '', labels TEXT NOT NULL DEFAULT '')""",
        "CREATE INDEX metric_samples_by_run ON metric_samples (run_id, source, name)",
    ),
    (  # version 3: run options such as the transaction mode (client-side SQL or stored functions)
        "ALTER TABLE runs ADD COLUMN options TEXT NOT NULL DEFAULT '{}'",
    ),
    (  # version 4: the process that runs a run, so that a run left "running" by a killed one is told apart
        "ALTER TABLE runs ADD COLUMN runner TEXT",
    ),
    (  # version 5: the result file of deferred transactions (TPC-C 2.7.2.3: each Delivery's orders or skips)
        """CREATE TABLE deferred_results (
            run_id INTEGER NOT NULL REFERENCES runs(id), terminal INTEGER NOT NULL, transaction_name TEXT NOT NULL,
            queued REAL NOT NULL, completed REAL NOT NULL, outcome TEXT NOT NULL, record TEXT)""",
        "CREATE INDEX deferred_results_by_run ON deferred_results (run_id, queued)",
    ),
    (  # version 6: a run's workload settings as the workload gives them back (JSON), not TPC-C's three columns
        """CREATE TABLE runs_v6 (
            id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, finished_at TEXT, status TEXT NOT NULL,
            engine TEXT NOT NULL, workload TEXT NOT NULL, workload_settings TEXT NOT NULL,
            terminals INTEGER NOT NULL, warmup_s REAL NOT NULL, duration_s REAL NOT NULL, seed INTEGER NOT NULL,
            knobs TEXT NOT NULL, effective_knobs TEXT NOT NULL, engine_settings TEXT NOT NULL, database TEXT NOT NULL,
            load_seconds REAL, loaded_in_run INTEGER NOT NULL, load_seed INTEGER, constants TEXT NOT NULL,
            environment TEXT NOT NULL, warnings TEXT NOT NULL DEFAULT '[]', errors TEXT NOT NULL DEFAULT '[]',
            window_start REAL NOT NULL, window_end REAL NOT NULL, elapsed_s REAL,
            experiment_id INTEGER REFERENCES experiments(id), plan_key TEXT, options TEXT NOT NULL DEFAULT '{}',
            runner TEXT)""",
        """INSERT INTO runs_v6 SELECT id, started_at, finished_at, status, engine, workload,
            json_object('warehouses', warehouses,
                        'keying', json(CASE WHEN keying_and_think THEN 'true' ELSE 'false' END), 'mix', mix),
            terminals, warmup_s, duration_s, seed, knobs, effective_knobs, engine_settings, database, load_seconds,
            loaded_in_run, load_seed, constants, environment, warnings, errors, window_start, window_end, elapsed_s,
            experiment_id, plan_key, options, runner FROM runs""",
        "DROP INDEX runs_by_experiment",
        "DROP TABLE runs",
        "ALTER TABLE runs_v6 RENAME TO runs",
        "CREATE INDEX runs_by_experiment ON runs (experiment_id, plan_key)",
    ),
    (  # version 7: how the read side reads a run (records.WorkloadReading, JSON): it asks no workload
        "ALTER TABLE runs ADD COLUMN reading TEXT",
    ),
    (  # version 8: crash tests (records.CrashTest), alone or a step's in an experiment; checks as JSON lists of
        # records.CheckResult's fields, since a test's checks are read whole and never queried one by one
        """CREATE TABLE crash_tests (
            id INTEGER PRIMARY KEY, at TEXT NOT NULL, engine TEXT NOT NULL, knobs TEXT NOT NULL,
            workload TEXT NOT NULL, settings TEXT NOT NULL, terminals INTEGER NOT NULL, mode TEXT NOT NULL,
            seed INTEGER NOT NULL, verdict TEXT NOT NULL, acknowledged INTEGER NOT NULL, rolled_back INTEGER NOT NULL,
            lost TEXT NOT NULL, findings_checks TEXT NOT NULL, checks TEXT NOT NULL, recovery_s REAL,
            crashed_at_s REAL NOT NULL, loss_window TEXT NOT NULL, notes TEXT NOT NULL, environment TEXT NOT NULL,
            experiment_id INTEGER REFERENCES experiments(id), plan_key TEXT)""",
        "CREATE INDEX crash_tests_by_experiment ON crash_tests (experiment_id, plan_key)",
    ),
    (  # version 9: the device's own limit beside a storage-bound run (records.DeviceLimit): fio's job and its JSON
        """CREATE TABLE device_limits (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id), job TEXT NOT NULL, directory TEXT NOT NULL,
            iops REAL NOT NULL, bytes_per_s REAL NOT NULL, latency_p50_us REAL NOT NULL, latency_p99_us REAL NOT NULL,
            output TEXT NOT NULL)""",
    ),
    (  # version 10: a fixed-rate run's intended start of each transaction (TxnSample.intended; NULL: closed loop)
        "ALTER TABLE txn_samples ADD COLUMN intended REAL",
    ),
    (  # version 11: response times as interval HdrHistograms (records.IntervalHistogram, maximus.histograms)
        """CREATE TABLE latency_histograms (
            run_id INTEGER NOT NULL REFERENCES runs(id), transaction_name TEXT NOT NULL, kind TEXT NOT NULL,
            start REAL NOT NULL, counted INTEGER NOT NULL, histogram TEXT NOT NULL)""",
        "CREATE INDEX latency_histograms_by_run ON latency_histograms (run_id)",
    ),
    (  # version 12: a run's samples as columns (``maximus.samples.Samples``), a part of up to 1 Mi samples a row, in
        # the order of their starts, each column one little-endian array; the transactions' and outcomes' names
        # (JSON) that their codes index; the few error texts beside them, by sample. Runs stored before keep their
        # rows in txn_samples, which are read as they were.
        """CREATE TABLE sample_columns (
            run_id INTEGER NOT NULL REFERENCES runs(id), part INTEGER NOT NULL, samples INTEGER NOT NULL,
            transaction_names TEXT NOT NULL, outcome_names TEXT NOT NULL, transaction_code BLOB NOT NULL,
            terminal BLOB NOT NULL, start BLOB NOT NULL, latency BLOB NOT NULL, outcome_code BLOB NOT NULL,
            attempts BLOB NOT NULL, intended BLOB NOT NULL, PRIMARY KEY (run_id, part))""",
        """CREATE TABLE sample_errors (
            run_id INTEGER NOT NULL REFERENCES runs(id), sample INTEGER NOT NULL, error TEXT NOT NULL,
            PRIMARY KEY (run_id, sample))""",
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)
# The oldest version read as it is where it cannot be migrated (a read-only archive): what the versions after it
# add are tables that the runs it stored do not need (sample_columns, sample_errors)
READABLE_UNMIGRATED = 11


def migrate(connection: sqlite3.Connection) -> int:
    """Bring the database up to SCHEMA_VERSION; return the version it had before. One process at a time, in
    one transaction: two Maximus processes that open a new results database together would otherwise both
    create its tables, and the second would fail on "table runs already exists"."""
    connection.execute("BEGIN IMMEDIATE")  # the other waits here (the connection's timeout), then finds it done
    try:
        connection.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = connection.execute("SELECT version FROM schema_version").fetchone()
        before = row[0] if row else 0
        if before > SCHEMA_VERSION:
            raise UserError(f"the results database has schema version {before}, newer than this Maximus "
                            f"understands ({SCHEMA_VERSION}): upgrade Maximus")
        for statements in MIGRATIONS[before:]:
            for statement in statements:
                connection.execute(statement)
        if before != SCHEMA_VERSION:
            connection.execute("DELETE FROM schema_version")
            connection.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        connection.commit()
    except BaseException:
        connection.rollback()
        raise
    return before
