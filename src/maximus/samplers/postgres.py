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
  allows for the transactions psycopg runs per session, see ``analysis.monitoring.Tolerance``).
- Wait events of the run's sessions, sampled from ``pg_stat_activity`` ``WAIT_SAMPLES_PER_S`` times a
  second by a thread of this sampler with its own connection: ``activity_snapshots_total``,
  ``active_backend_samples_total`` (active client backends seen, waiting or not) and
  ``wait_samples_total{event}`` (of those, seen waiting in ``event``, as ``type:name``). A series
  ``wait_samples_total{event}`` first appears at the first reading after the event was first seen:
  its count was 0 before. ``sampling_cpu_seconds_total`` is that thread's own CPU time (the monitor adds
  it to the cost of monitoring).
- Managed server only: the postmaster and all its children as the process group ``server``
  (``process_cpu_seconds_total{group=server, mode}``, ``processes{group=server}``,
  ``process_*_bytes_total{group=server}``, the names of ``os_linux``). Children that have exited are
  included through the postmaster's own counters (the kernel adds a reaped child's CPU and I/O to its
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

import os
import threading
import time
from collections import Counter as Tally
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from maximus import environment
from maximus.samplers import os_linux
from maximus.samplers.base import Reading, Sampler, SamplerUnavailable, SamplingContext

SOURCE = "postgres"
WAIT_SAMPLES_PER_S = 10.0
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


# --- the server's processes ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessTimes:
    """What ``/proc/PID/stat`` says about a process's CPU, and about its reaped children's."""

    state: str
    parent: int
    user_s: float
    system_s: float
    children_user_s: float  # children that have exited and been waited for
    children_system_s: float


def parse_process_times(text: str) -> ProcessTimes:
    """``/proc/PID/stat``; the command name may hold spaces and ')', so fields count from the last ')'."""
    fields = text[text.rindex(")") + 2:].split()
    ticks = [int(v) / os_linux.CLOCK_TICKS for v in fields[11:15]]
    return ProcessTimes(fields[0], int(fields[1]), *ticks)


def _read(path: Path) -> str:
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read()


def children_of(pid: int) -> list[int]:
    """Direct children of a single-threaded process: its ``children`` file, or a scan of ``/proc``."""
    try:
        return [int(child) for child in _read(environment.PROC / str(pid) / "task" / str(pid) / "children").split()]
    except FileNotFoundError:  # kernels built without CONFIG_PROC_CHILDREN
        return [int(entry) for entry in os.listdir(environment.PROC) if entry.isdigit() and _parent(int(entry)) == pid]


def _parent(pid: int) -> int | None:
    try:
        return parse_process_times(_read(environment.PROC / str(pid) / "stat")).parent
    except (OSError, ValueError, IndexError):
        return None


class ServerProcesses:
    """The postmaster and its children as the process group ``server``, children that exited included.

    The kernel adds the CPU time and I/O of a child its parent has waited for to the parent's own
    counters (``cutime``/``cstime`` in ``stat``; ``io``), and the postmaster waits for every child it
    forks. So postmaster + its reaped children + its live children covers every server process that
    ever ran. The postmaster is read first: a child reaped in between is then missing from one
    reading, never counted twice; the counters are also kept from ever going back.
    """

    def __init__(self, postmaster: int, with_io: bool) -> None:
        self.postmaster = postmaster
        self.with_io = with_io
        self._highest: dict[str, float] = {}

    def read(self) -> list[Reading]:
        main = parse_process_times(_read(environment.PROC / str(self.postmaster) / "stat"))  # the server died: raise
        user, system = main.user_s + main.children_user_s, main.system_s + main.children_system_s
        io = Tally(self._io(self.postmaster))
        alive = 1
        for child in children_of(self.postmaster):
            try:
                times = parse_process_times(_read(environment.PROC / str(child) / "stat"))
            except (OSError, ValueError, IndexError):
                continue  # exited since the list was read: its counters reach the postmaster's
            user += times.user_s + times.children_user_s
            system += times.system_s + times.children_system_s
            io.update(self._io(child))
            alive += times.state not in ("Z", "X")
        labels = {"group": "server"}
        readings = [Reading("process_cpu_seconds_total", self._never_less("user", user), "s",
                            {**labels, "mode": "user"}),
                    Reading("process_cpu_seconds_total", self._never_less("system", system), "s",
                            {**labels, "mode": "system"}),
                    Reading("processes", alive, "count", labels)]
        if self.with_io:
            readings += [Reading(name, self._never_less(key, io[key]), "bytes", labels)
                         for key, name in os_linux.PROCESS_IO.items()]
        return readings

    def _io(self, pid: int) -> dict[str, int]:
        if not self.with_io:
            return {}
        try:
            return os_linux.parse_pid_io(_read(environment.PROC / str(pid) / "io"))
        except OSError:
            return {}  # exited (or a zombie): its I/O reaches the postmaster's counters when reaped

    def _never_less(self, key: str, value: float) -> float:
        self._highest[key] = max(value, self._highest.get(key, 0.0))
        return self._highest[key]


def postmaster_pid(pid_file: Path) -> int:
    """The postmaster's pid: the first line of ``postmaster.pid`` in the data directory."""
    try:
        return int(_read(pid_file).split()[0])
    except (OSError, ValueError, IndexError) as error:
        raise SamplerUnavailable(f"cannot read the server's pid from {pid_file}: {error}") from None


# --- wait events, sampled ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class WaitCounts:
    """What the wait sampler has seen since it started."""

    snapshots: int
    active: int  # active client backends seen, summed over snapshots
    events: Mapping[str, int]  # of those, seen waiting, by ``type:name``
    cpu_s: float  # the sampling thread's own CPU time


WAIT_QUERY = ("SELECT wait_event_type, wait_event, count(*) FROM pg_stat_activity "
              "WHERE datname = $1 AND backend_type = 'client backend' AND state = 'active' "
              "AND pid <> ALL($2::int[]) GROUP BY 1, 2")
_WAIT_STATEMENT = b"maximus_wait_snapshot"


class WaitSampler:
    """Snapshots of ``pg_stat_activity`` at a fixed rate, in a thread with its own connection.

    The monitor reads counters once a second; a wait lasts from microseconds to milliseconds, so one
    look a second would see too few of them. Each snapshot counts the run database's active client
    backends and what each waits for; the shares of the samples estimate the shares of time.

    A snapshot is one libpq call (``exec_prepared``) of a statement prepared once, with its parameters in
    text, not psycopg's ``execute``: the thread sleeps between two snapshots, so each one runs with the
    caches cold. Through ``execute`` a snapshot cost the thread about 660 µs of CPU, its wake-up
    included, ten times a second on the CPUs the run shares; this way, about 330.
    """

    def __init__(self, connection: Any, database: str, excluded_pids: Sequence[int],
                 per_second: float = WAIT_SAMPLES_PER_S) -> None:
        self._connection = connection
        from psycopg.pq import ExecStatus

        self._succeeded = (ExecStatus.COMMAND_OK, ExecStatus.TUPLES_OK)
        self._encoding = connection.info.encoding  # the session's client_encoding, as psycopg names it
        self._parameters = [database.encode(self._encoding),
                            ("{" + ",".join(map(str, excluded_pids)) + "}").encode(self._encoding)]
        self._interval_s = 1.0 / per_second
        self._lock = threading.Lock()
        self._counts = WaitCounts(0, 0, {}, 0.0)
        self._error: Exception | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="maximus-pg-waits", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def counts(self) -> WaitCounts:
        """The counts so far; raises what stopped the thread, so the failure is not mistaken for no waits."""
        with self._lock:
            if self._error is not None:
                raise RuntimeError(f"wait-event sampling stopped: {type(self._error).__name__}: {self._error}")
            return self._counts

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        self._connection.close()

    def _run(self) -> None:
        due = time.monotonic()
        try:
            self._result(self._connection.pgconn.prepare(_WAIT_STATEMENT, WAIT_QUERY.encode()))
            while not self._stopping.wait(max(0.0, due - time.monotonic())):
                self._add(self._snapshot())
                due = max(due + self._interval_s, time.monotonic())  # a slow snapshot skips, never bunches
        except Exception as error:  # reported by the next counts(), from the monitor's thread
            with self._lock:
                self._error = error

    def _snapshot(self) -> list[tuple[str | None, str | None, int]]:
        result = self._result(self._connection.pgconn.exec_prepared(_WAIT_STATEMENT, self._parameters))
        text = self._text
        return [(text(result.get_value(row, 0)), text(result.get_value(row, 1)), int(result.get_value(row, 2)))
                for row in range(result.ntuples)]

    def _text(self, value: bytes | None) -> str | None:
        return None if value is None else value.decode(self._encoding)

    def _result(self, result: Any) -> Any:
        """``result``, or the exception psycopg would have raised for it."""
        if result.status not in self._succeeded:
            from psycopg import errors

            raise errors.error_from_result(result, encoding=self._encoding)
        return result

    def _add(self, rows: Sequence[tuple[str | None, str | None, int]]) -> None:
        events = dict(self._counts.events)
        for kind, name, count in rows:
            if name is not None:
                event = f"{kind}:{name}"
                events[event] = events.get(event, 0) + count
        with self._lock:
            self._counts = WaitCounts(self._counts.snapshots + 1, self._counts.active + sum(r[2] for r in rows),
                                      events, time.thread_time())


def wait_readings(counts: WaitCounts) -> list[Reading]:
    return [Reading("activity_snapshots_total", counts.snapshots, "count"),
            Reading("active_backend_samples_total", counts.active, "count"),
            *(Reading("wait_samples_total", n, "count", {"event": event}) for event, n in sorted(counts.events.items())),
            Reading("sampling_cpu_seconds_total", counts.cpu_s, "s")]


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
        self._server: ServerProcesses | None = None
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
            postmaster = postmaster_pid(self.pid_file)
        except SamplerUnavailable as error:  # the statistics views are still worth reading
            return [f"{error}: the server's processes are not sampled, so there is no server CPU, no client-bound "
                    "check and no reads cross-check"]
        with_io = _readable(environment.PROC / str(postmaster) / "io")
        self._server = ServerProcesses(postmaster, with_io)
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


def _readable(path: Path) -> bool:
    try:
        return bool(os_linux.parse_pid_io(_read(path)))
    except OSError:
        return False
