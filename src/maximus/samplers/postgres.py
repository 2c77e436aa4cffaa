"""The PostgreSQL sampler: the server's statistics views, its sessions' wait events and its processes.

Readings (source ``postgres``; counters cumulative as PostgreSQL keeps them, since the server started
or its statistics were reset, except the wait samples, which count from ``open``):

- ``pg_stat_database``, the run's database only: ``commits_total{counts=all}`` (``xact_commit``: every
  committed transaction in the database, read-only ones included), ``rollbacks_total``,
  ``buffer_hits_total`` and ``buffer_misses_total`` (``blks_hit``, ``blks_read``: a miss is a block read
  from the OS, which may serve it from its page cache), the timed wait ``IO:DataFileRead``
  (``waits_total`` = ``blks_read``, ``wait_seconds_total`` = ``blk_read_time``, role ``data_read``),
  ``block_write_seconds_total``, ``rows_total{op}``, ``deadlocks_total``, ``temp_bytes_total``,
  ``session_seconds_total{state=active|idle_in_transaction}``.
- ``pg_stat_wal`` (PostgreSQL 14+): ``wal_records_total``, ``wal_full_page_images_total``,
  ``wal_bytes_total``, ``wal_buffers_full_total``, and the timed waits ``IO:WALWrite`` and ``IO:WALSync``
  (``waits_total`` = ``wal_write``/``wal_sync``, ``wait_seconds_total`` = their times; ``IO:WALSync`` has
  role ``log_sync``). PostgreSQL 18 moved WAL writes and syncs to ``pg_stat_io`` (object ``wal``):
  they are read from there when ``pg_stat_wal`` no longer has them.
- ``pg_stat_bgwriter`` and, from PostgreSQL 17, ``pg_stat_checkpointer``: ``checkpoints_total{kind}``
  (timed, requested), ``checkpoint_write_seconds_total``, ``checkpoint_sync_seconds_total``,
  ``buffers_written_total{by}`` (checkpointer, bgwriter, backend), ``bgwriter_stops_total``,
  ``backend_fsyncs_total``, ``buffers_allocated_total``.
- ``pg_stat_io`` (PostgreSQL 16+), summed per backend type over objects and contexts:
  ``io_operations_total{backend_type, op}`` and ``io_seconds_total{backend_type, op}``.
- ``client_backends``: sessions connected to the run's database now (a gauge; the commit cross-check
  allows for the transactions psycopg runs per session, see ``analysis.crosschecks.Tolerance``).
- Wait events of the run's sessions, sampled from ``pg_stat_activity`` ``WAIT_SAMPLES_PER_S`` times a
  second by a thread of this sampler with its own connection (``postgres_waits.py``): ``activity_snapshots_total``,
  ``active_backend_samples_total`` (active client backends seen, waiting or not) and
  ``wait_samples_total{event}`` (of those, seen waiting in ``event``, as ``type:name``). A series
  ``wait_samples_total{event}`` first appears at the first reading after the event was first seen:
  its count was 0 before. ``sampling_cpu_seconds_total`` is that thread's own CPU time (the monitor adds
  it to the cost of monitoring).
- Managed server only: the postmaster and all its children as the process group ``server``
  (``process_cpu_seconds_total{group=server, mode}``, ``processes{group=server}``,
  ``process_*_bytes_total{group=server}``, read by ``processes.ProcessTree``). Children that have exited
  are included through the postmaster's own counters (the kernel adds a reaped child's CPU and I/O to its
  parent's), so the group's counters cover every backend, autovacuum worker and checkpointer.

Times that need ``track_io_timing`` or ``track_wal_io_timing`` are read only when the setting is on:
with it off PostgreSQL leaves them at 0, which would read as waits of 0 ms.

The sampler's sessions connect to the ``postgres`` database, not the run's, so its own queries are
not counted in the run database's commit counter. PostgreSQL publishes a backend's counters when its
transaction ends, at most once a second while it is busy, and when it exits: the reading after the
workers have finished waits (at most ``FINAL_WAIT_S``) for the run's backends to exit, so that it
holds all their work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from maximus.samplers import os_linux, processes
from maximus.samplers.postgres_waits import WaitSampler, wait_readings
from maximus.samplers.base import Reading, Sampler, SamplerUnavailable, SamplingContext

SOURCE = "postgres"
FINAL_WAIT_S = 2.0  # at most this long for the run's backends to exit and publish their last counters
IO_TIMING, WAL_IO_TIMING = "track_io_timing", "track_wal_io_timing"
_MS = 0.001
_VIEWS = ("pg_stat_wal", "pg_stat_bgwriter", "pg_stat_checkpointer", "pg_stat_io")
_TIMED = {IO_TIMING: "data-file reads", WAL_IO_TIMING: "WAL writes and syncs"}


@dataclass(frozen=True)
class Column:
    """How one column of a statistics view becomes a reading: name, labels, unit, scale to the unit.

    ``timing`` names the setting without which PostgreSQL leaves the column at 0 (then it is not read).
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    unit: str = "count"
    scale: float = 1.0
    timing: str | None = None


def _wait(event: str, role: str = "") -> dict[str, str]:
    return {"event": event, **({"role": role} if role else {})}


DATA_FILE_READ, WAL_WRITE, WAL_SYNC = _wait("IO:DataFileRead", "data_read"), _wait("IO:WALWrite"), \
    _wait("IO:WALSync", "log_sync")

DATABASE_COLUMNS: Mapping[str, Column] = {
    "xact_commit": Column("commits_total", {"counts": "all", "from": "pg_stat_database.xact_commit"}),
    "xact_rollback": Column("rollbacks_total"),
    "blks_hit": Column("buffer_hits_total"),
    "blks_read": Column("buffer_misses_total"),
    "tup_inserted": Column("rows_total", {"op": "inserted"}),
    "tup_updated": Column("rows_total", {"op": "updated"}),
    "tup_deleted": Column("rows_total", {"op": "deleted"}),
    "deadlocks": Column("deadlocks_total"),
    "temp_bytes": Column("temp_bytes_total", unit="bytes"),
    "blk_write_time": Column("block_write_seconds_total", unit="s", scale=_MS, timing=IO_TIMING),
    "active_time": Column("session_seconds_total", {"state": "active"}, "s", _MS),
    "idle_in_transaction_time": Column("session_seconds_total", {"state": "idle_in_transaction"}, "s", _MS),
}
# The same columns as timed waits: blk_read_time is the time of the reads blks_read counts.
DATABASE_WAITS: Mapping[str, Column] = {
    "blks_read": Column("waits_total", DATA_FILE_READ),
    "blk_read_time": Column("wait_seconds_total", DATA_FILE_READ, "s", _MS, IO_TIMING),
}
WAL_COLUMNS: Mapping[str, Column] = {
    "wal_records": Column("wal_records_total"),
    "wal_fpi": Column("wal_full_page_images_total"),
    "wal_bytes": Column("wal_bytes_total", unit="bytes"),
    "wal_buffers_full": Column("wal_buffers_full_total"),
    "wal_write": Column("waits_total", WAL_WRITE),
    "wal_write_time": Column("wait_seconds_total", WAL_WRITE, "s", _MS, WAL_IO_TIMING),
    "wal_sync": Column("waits_total", WAL_SYNC),
    "wal_sync_time": Column("wait_seconds_total", WAL_SYNC, "s", _MS, WAL_IO_TIMING),
}
# pg_stat_bgwriter up to PostgreSQL 16; from 17 the checkpoint columns live in pg_stat_checkpointer.
BGWRITER_COLUMNS: Mapping[str, Column] = {
    "checkpoints_timed": Column("checkpoints_total", {"kind": "timed"}),
    "checkpoints_req": Column("checkpoints_total", {"kind": "requested"}),
    "checkpoint_write_time": Column("checkpoint_write_seconds_total", unit="s", scale=_MS),
    "checkpoint_sync_time": Column("checkpoint_sync_seconds_total", unit="s", scale=_MS),
    "buffers_checkpoint": Column("buffers_written_total", {"by": "checkpointer"}),
    "buffers_clean": Column("buffers_written_total", {"by": "bgwriter"}),
    "buffers_backend": Column("buffers_written_total", {"by": "backend"}),
    "maxwritten_clean": Column("bgwriter_stops_total"),
    "buffers_backend_fsync": Column("backend_fsyncs_total"),
    "buffers_alloc": Column("buffers_allocated_total"),
}
CHECKPOINTER_COLUMNS: Mapping[str, Column] = {
    "num_timed": BGWRITER_COLUMNS["checkpoints_timed"],
    "num_requested": BGWRITER_COLUMNS["checkpoints_req"],
    "write_time": BGWRITER_COLUMNS["checkpoint_write_time"],
    "sync_time": BGWRITER_COLUMNS["checkpoint_sync_time"],
    "buffers_written": BGWRITER_COLUMNS["buffers_checkpoint"],
}
IO_OPERATIONS = {"reads": "read", "writes": "write", "extends": "extend", "hits": "hit", "evictions": "eviction",
                 "fsyncs": "fsync"}
IO_TIMES = {"read_time": "read", "write_time": "write", "fsync_time": "fsync"}


# --- pure mappings: rows of the statistics views in, readings out -------------------------------------


def column_readings(row: Mapping[str, Any], columns: Mapping[str, Column], timings: Mapping[str, bool]
                    ) -> list[Reading]:
    """The columns of ``row`` that ``columns`` maps; NULLs, absent columns and untimed times are skipped."""
    return [Reading(c.name, float(row[key]) * c.scale, c.unit, c.labels) for key, c in columns.items()
            if row.get(key) is not None and (c.timing is None or timings.get(c.timing, False))]


def io_readings(rows: Iterable[Mapping[str, Any]], timings: Mapping[str, bool]) -> list[Reading]:
    """``pg_stat_io`` summed per backend type (objects other than WAL, every context).

    An operation that does not apply to a backend type is NULL in every row and is not reported;
    PostgreSQL lists the same rows at every reading, so each series is present from the first one.
    """
    operations: dict[tuple[str, str], float] = {}
    seconds: dict[tuple[str, str], float] = {}
    for row in rows:
        if row.get("object") == "wal":
            continue
        for column, op in IO_OPERATIONS.items():
            if row.get(column) is not None:
                key = (row["backend_type"], op)
                operations[key] = operations.get(key, 0.0) + float(row[column])
        for column, op in IO_TIMES.items():
            if row.get(column) is not None and timings.get(IO_TIMING, False):
                key = (row["backend_type"], op)
                seconds[key] = seconds.get(key, 0.0) + float(row[column]) * _MS
    return ([Reading("io_operations_total", v, "count", {"backend_type": b, "op": op})
             for (b, op), v in sorted(operations.items())]
            + [Reading("io_seconds_total", v, "s", {"backend_type": b, "op": op})
               for (b, op), v in sorted(seconds.items())])


def wal_io_readings(rows: Iterable[Mapping[str, Any]], timings: Mapping[str, bool]) -> list[Reading]:
    """PostgreSQL 18+: WAL writes and syncs from ``pg_stat_io`` (object ``wal``, context ``normal``)."""
    normal = [row for row in rows if row.get("object") == "wal" and row.get("context") == "normal"]
    total = lambda column: sum(float(row.get(column) or 0) for row in normal)  # noqa: E731
    readings = [Reading("waits_total", total("writes"), "count", WAL_WRITE),
                Reading("waits_total", total("fsyncs"), "count", WAL_SYNC)]
    if timings.get(WAL_IO_TIMING, False):
        readings += [Reading("wait_seconds_total", total("write_time") * _MS, "s", WAL_WRITE),
                     Reading("wait_seconds_total", total("fsync_time") * _MS, "s", WAL_SYNC)]
    return readings if normal else []


# --- the sampler -------------------------------------------------------------------------------------------


class PostgresSampler(Sampler):
    """One PostgreSQL server and the run's database on it (see the module's docstring).

    ``dsn`` gives the connection string of a maintenance database on the server (``postgres``); it is
    called in ``open``, once the server runs. ``pid_file`` is the managed server's ``postmaster.pid``
    (None for a server Maximus does not own: its processes are not sampled). ``enabled`` names the
    timing settings Maximus turned on for this run, which ``open`` reports.
    """

    source = SOURCE

    def __init__(self, dsn: Callable[[], str], database: str, pid_file: Path | None,
                 enabled: Sequence[str] = ()) -> None:
        self.dsn = dsn
        self.database = database
        self.pid_file = pid_file
        self.enabled = tuple(enabled)
        self.timings: dict[str, bool] = {}
        self.views: set[str] = set()
        self._connection: Any = None
        self._waits: WaitSampler | None = None
        self._server: processes.ProcessTree | None = None
        self._clients: tuple[int, ...] = ()
        self._final_done = False

    def open(self, context: SamplingContext) -> list[str]:
        self._connection = _connect(self.dsn())
        self.views = {name for (name,) in self._connection.execute(
            "SELECT name FROM unnest(%s::text[]) AS name WHERE to_regclass('pg_catalog.' || name) IS NOT NULL",
            (list(_VIEWS),)).fetchall()}
        self.timings = {name: setting == "on" for name, setting in self._connection.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", ([IO_TIMING, WAL_IO_TIMING],)).fetchall()}
        if self._database_row() is None:
            raise SamplerUnavailable(f"no database {self.database!r} in pg_stat_database")
        self._clients = tuple(context.groups.get("client", ()))
        notes = self._timing_notes()
        notes += self._open_server_processes()
        waits = _connect(self.dsn())
        own = [waits.info.backend_pid, self._connection.info.backend_pid]
        self._waits = WaitSampler(waits, self.database, own)
        self._waits.start()
        if "pg_stat_wal" not in self.views:
            notes.append("pg_stat_wal is absent (PostgreSQL 14 and later have it): no WAL statistics and no "
                         "log-sync wait")
        return notes

    def read(self) -> list[Reading]:
        if self._connection is None or self._waits is None:
            raise RuntimeError("the PostgreSQL sampler is not open")
        self._await_exited_clients()
        row = self._database_row()
        if row is None:
            raise RuntimeError(f"database {self.database!r} is gone from pg_stat_database")
        readings = column_readings(row, DATABASE_COLUMNS, self.timings)
        readings += column_readings(row, DATABASE_WAITS, self.timings)
        readings.append(Reading("client_backends", self._client_backends(), "count"))
        readings += self._view_readings()
        readings += wait_readings(self._waits.counts())
        if self._server is not None:
            readings += self._server.read()
        return readings

    def close(self) -> None:
        waits, connection = self._waits, self._connection
        self._waits = self._connection = None
        for release in ((waits.stop,) if waits else ()) + ((connection.close,) if connection else ()):
            try:
                release()
            except Exception:  # close must not raise; the connection is gone either way
                pass

    # -- what open reports ---------------------------------------------------------------------------

    def _timing_notes(self) -> list[str]:
        notes = []
        on = [name for name in self.enabled if self.timings.get(name)]
        if on:
            timed = " and ".join(_TIMED[name] for name in on)
            notes.append(f"Maximus turned on {' and '.join(on)} for this run (in maximus.conf; the run's knobs do "
                         f"not set {'it' if len(on) == 1 else 'them'}), so that {timed} are timed: PostgreSQL then "
                         "reads the clock around each of them")
        if IO_TIMING in self.timings and not self.timings[IO_TIMING]:
            notes.append("track_io_timing is off on this server: data-file read times, hence the data-file read "
                         "wait, are not measured")
        if WAL_IO_TIMING in self.timings and not self.timings[WAL_IO_TIMING]:
            notes.append("track_wal_io_timing is off on this server: WAL write and sync times, hence the log-sync "
                         "wait, are not measured")
        return notes

    def _open_server_processes(self) -> list[str]:
        if self.pid_file is None:
            return ["the server is not managed by Maximus and may be on another machine: its processes are not "
                    "sampled, so there is no server CPU, no client-bound check and no reads cross-check"]
        try:
            postmaster = processes.pid_in_file(self.pid_file)
        except SamplerUnavailable as error:  # the statistics views are still worth reading
            return [f"{error}: the server's processes are not sampled, so there is no server CPU, no client-bound "
                    "check and no reads cross-check"]
        with_io = processes.io_readable(postmaster)
        self._server = processes.ProcessTree(postmaster, with_io)
        return [] if with_io else [f"the server's I/O counters (/proc/{postmaster}/io) are not readable: the reads "
                                   "cross-check is skipped"]

    # -- reading -------------------------------------------------------------------------------------

    def _database_row(self) -> Mapping[str, Any] | None:
        rows = self._dict_query("SELECT * FROM pg_stat_database WHERE datname = %s", (self.database,))
        return rows[0] if rows else None

    def _view_readings(self) -> list[Reading]:
        readings: list[Reading] = []
        wal = self._dict_query("SELECT * FROM pg_stat_wal") if "pg_stat_wal" in self.views else []
        if wal:
            readings += column_readings(wal[0], WAL_COLUMNS, self.timings)
        if "pg_stat_bgwriter" in self.views:
            readings += column_readings(self._dict_query("SELECT * FROM pg_stat_bgwriter")[0], BGWRITER_COLUMNS,
                                        self.timings)
        if "pg_stat_checkpointer" in self.views:
            readings += column_readings(self._dict_query("SELECT * FROM pg_stat_checkpointer")[0],
                                        CHECKPOINTER_COLUMNS, self.timings)
        if "pg_stat_io" in self.views:
            io = self._dict_query("SELECT * FROM pg_stat_io")
            readings += io_readings(io, self.timings)
            if wal and "wal_sync" not in wal[0]:  # PostgreSQL 18 moved WAL writes and syncs to pg_stat_io
                readings += wal_io_readings(io, self.timings)
        return readings

    def _dict_query(self, sql: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        from psycopg.rows import dict_row

        with self._connection.cursor(row_factory=dict_row) as cursor:
            return cursor.execute(sql, parameters).fetchall()

    def _await_exited_clients(self) -> None:
        """Once every client process has exited, wait for their backends to exit and publish their counters.

        A backend publishes its last counters when it exits, shortly after its client has gone; the
        reading taken after the workers finished must include them. Done once, bounded by ``FINAL_WAIT_S``.
        """
        if self._final_done or not self._clients or any(os_linux.read_process(pid, False) for pid in self._clients):
            return
        self._final_done = True
        deadline = time.monotonic() + FINAL_WAIT_S
        while time.monotonic() < deadline and self._client_backends():
            time.sleep(0.02)

    def _client_backends(self) -> int:
        """Sessions connected to the run's database (the sampler's own are in another database)."""
        return self._connection.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND "
                                        "backend_type = 'client backend' AND pid <> pg_backend_pid()",
                                        (self.database,)).fetchone()[0]


def _connect(dsn: str) -> Any:
    """An autocommit session for statistics: every query is its own short transaction, so it holds no
    snapshot and sees fresh counters; a statement timeout keeps a stuck server from stalling the monitor."""
    import psycopg

    connection = psycopg.connect(dsn, autocommit=True, application_name="maximus-sampler", connect_timeout=10)
    connection.execute("SET statement_timeout = '5s'")
    return connection

