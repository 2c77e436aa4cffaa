"""The MariaDB sampler: the server's status counters, InnoDB's timed data-file waits and its process.

Readings (source ``mariadb``; counters cumulative since the server started, as SHOW GLOBAL STATUS keeps them):

- ``statements_total{statement=commit|rollback}`` (``Com_commit``, ``Com_rollback``: COMMIT and ROLLBACK
  statements; a stored-function call in autocommit mode commits without one, so these count client-side
  transactions only), ``handler_commits_total`` (``Handler_commit``: every transaction a storage engine
  committed, autocommitted statements included), ``rows_total{op}`` (``Innodb_rows_*``, which MySQL and MariaDB
  before 10.6 have), ``deadlocks_total``
  (``Innodb_deadlocks``), ``row_lock_waits_total`` and ``row_lock_wait_seconds_total`` (``Innodb_row_lock_*``).
- InnoDB's I/O: ``data_reads_total``/``data_writes_total`` and ``data_read_bytes_total``/``data_written_bytes_total``
  (``Innodb_data_*``), ``fsyncs_total`` (``Innodb_data_fsyncs``: every fsync InnoDB made, the redo log's included,
  one per commit at innodb_flush_log_at_trx_commit=1), ``log_bytes_total`` (``Innodb_os_log_written``: redo log
  written), ``log_fsyncs_total`` (``Innodb_os_log_fsyncs``, which MySQL and MariaDB before 10.8 have),
  ``log_buffer_waits_total`` (``Innodb_log_waits``: a commit waited for room in the
  log buffer), ``buffer_hits_total`` and ``buffer_misses_total`` (``Innodb_buffer_pool_read_requests`` less
  ``Innodb_buffer_pool_reads``, and ``Innodb_buffer_pool_reads``: a page read from the data files, which the OS
  may serve from its page cache).
- Timed waits from performance_schema (``file_summary_by_event_name``, when performance_schema is on, which a
  managed server gets, and the user may read it): InnoDB's data-file reads as ``waits_total``/``wait_seconds_total
  {event="io/innodb_data_file:read", role=data_read}``, their writes (``:write``), and their other operations
  (``:misc``: syncs, but also opens, closes, stats and the rest, which performance_schema counts together and
  tells apart only in its event history, whose consumers are off). MariaDB 10.11 times no redo-log I/O (its log
  file is not an instrumented file since 10.8): there is no ``log_sync`` wait, and ``fsyncs_total`` counts the
  syncs without their time. A user who may not read performance_schema gets the other readings, and a note.
- ``client_backends``: sessions connected to the run's database now (a gauge, from the processlist).
- Managed server only: ``mariadbd`` as the process group ``server`` (``process_cpu_seconds_total{group=server,
  mode}``, ...): one process, its threads' CPU and I/O included.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from maximus.samplers import processes
from maximus.samplers.base import Reading, Sampler, SamplerUnavailable, SamplingContext

SOURCE = "mariadb"
_PICOSECONDS = 1e-12
_STATUS: Mapping[str, tuple[str, Mapping[str, str], str, float]] = {  # variable: name, labels, unit, scale
    "Com_commit": ("statements_total", {"statement": "commit"}, "count", 1.0),
    "Com_rollback": ("statements_total", {"statement": "rollback"}, "count", 1.0),
    "Handler_commit": ("handler_commits_total", {}, "count", 1.0),
    "Innodb_rows_inserted": ("rows_total", {"op": "inserted"}, "count", 1.0),
    "Innodb_rows_updated": ("rows_total", {"op": "updated"}, "count", 1.0),
    "Innodb_rows_deleted": ("rows_total", {"op": "deleted"}, "count", 1.0),
    "Innodb_rows_read": ("rows_total", {"op": "read"}, "count", 1.0),
    "Innodb_deadlocks": ("deadlocks_total", {}, "count", 1.0),
    "Innodb_row_lock_waits": ("row_lock_waits_total", {}, "count", 1.0),
    "Innodb_row_lock_time": ("row_lock_wait_seconds_total", {}, "s", 0.001),
    "Innodb_data_reads": ("data_reads_total", {}, "count", 1.0),
    "Innodb_data_writes": ("data_writes_total", {}, "count", 1.0),
    "Innodb_data_read": ("data_read_bytes_total", {}, "bytes", 1.0),
    "Innodb_data_written": ("data_written_bytes_total", {}, "bytes", 1.0),
    "Innodb_data_fsyncs": ("fsyncs_total", {}, "count", 1.0),
    "Innodb_os_log_written": ("log_bytes_total", {}, "bytes", 1.0),
    "Innodb_os_log_fsyncs": ("log_fsyncs_total", {}, "count", 1.0),
    "Innodb_log_waits": ("log_buffer_waits_total", {}, "count", 1.0),
    "Innodb_buffer_pool_reads": ("buffer_misses_total", {}, "count", 1.0),
}
_REQUESTS, _MISSES = "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads"
DATA_FILE = "wait/io/file/innodb/innodb_data_file"
# performance_schema's groups of file operations: MISC is every one but reads and writes (sync, open, close, stat,
# ...), which only its event history tells apart
_FILE_WAITS = {"READ": ("read", "data_read"), "WRITE": ("write", ""), "MISC": ("misc", "")}
_FILE_WAIT_COLUMNS = tuple(f"{kind}_{column}" for column in _FILE_WAITS for kind in ("COUNT", "SUM_TIMER"))
_FILE_WAITS_SQL = (f"SELECT {', '.join(_FILE_WAIT_COLUMNS)} FROM performance_schema.file_summary_by_event_name "
                   f"WHERE EVENT_NAME = '{DATA_FILE}'")
_DENIED = {1044, 1142, 1143}  # access denied to a database, to a table, to a column


def status_readings(status: Mapping[str, str]) -> list[Reading]:
    """The counters of SHOW GLOBAL STATUS that ``_STATUS`` maps, and the buffer pool's hits."""
    readings = [Reading(name, float(status[variable]) * scale, unit, labels)
                for variable, (name, labels, unit, scale) in _STATUS.items() if variable in status]
    if _REQUESTS in status and _MISSES in status:
        readings.append(Reading("buffer_hits_total", max(0.0, float(status[_REQUESTS]) - float(status[_MISSES])),
                                "count"))
    return readings


def file_wait_readings(row: Mapping[str, Any] | None) -> list[Reading]:
    """InnoDB's data-file reads, writes and other operations, counted and timed (performance_schema's
    picoseconds)."""
    if row is None:
        return []
    readings = []
    for column, (operation, role) in _FILE_WAITS.items():
        labels = {"event": f"io/innodb_data_file:{operation}", **({"role": role} if role else {})}
        readings.append(Reading("waits_total", float(row[f"COUNT_{column}"]), "count", labels))
        readings.append(Reading("wait_seconds_total", float(row[f"SUM_TIMER_{column}"]) * _PICOSECONDS, "s", labels))
    return readings


class MariaDBSampler(Sampler):
    """One MariaDB server and the run's database on it (see the module's docstring).

    ``connect`` opens a MySQLdb connection to the server (called in ``open``, once it runs); ``pid``
    the managed server's process (None for a server Maximus does not own: its process is not sampled);
    ``enabled_performance_schema``: Maximus turned performance_schema on for this run, which ``open`` reports.
    """

    source = SOURCE

    def __init__(self, connect: Callable[[], Any], database: str, pid: Callable[[], int | None],
                 enabled_performance_schema: bool = False) -> None:
        self.connect = connect
        self.database = database
        self.pid = pid
        self.enabled_performance_schema = enabled_performance_schema
        self._connection: Any = None
        self._server: processes.ProcessTree | None = None
        self._file_waits = False

    def open(self, context: SamplingContext) -> list[str]:
        self._connection = self.connect()
        notes = self._open_file_waits()
        notes.append("MariaDB times no redo-log write or sync: there is no log-sync wait (fsyncs_total counts InnoDB's "
                     "syncs, the redo log's included)")
        notes += self._open_server_process()
        return notes

    def _open_file_waits(self) -> list[str]:
        """Whether InnoDB's data-file waits can be read (performance_schema on, and readable by this user): a note
        where they cannot, or where Maximus turned performance_schema on for them."""
        (on,) = self._rows("SELECT @@performance_schema")[0]
        if str(on) not in ("1", "ON"):
            return ["performance_schema is off on this server: data-file read times, hence the data-file read wait, "
                    "are not measured"]
        try:
            self._rows(_FILE_WAITS_SQL)
        except Exception as error:  # the driver's error: the samplers do not import the engines' drivers
            if not error.args or error.args[0] not in _DENIED:
                raise
            return [f"performance_schema is not readable by this user ({_text(error.args[-1])}): InnoDB's data-file "
                    "waits, hence the data-file read wait, are not measured (SHOW GLOBAL STATUS's counters still are)"]
        self._file_waits = True
        return ["Maximus turned on performance_schema for this run (the run's knobs do not set it), so that InnoDB's "
                "data-file reads are timed"] if self.enabled_performance_schema else []

    def _open_server_process(self) -> list[str]:
        pid = self.pid()
        if pid is None:
            return ["the server is not managed by Maximus and may be on another machine: its process is not sampled, "
                    "so there is no server CPU, no client-bound check and no reads cross-check"]
        with_io = processes.io_readable(pid)
        self._server = processes.ProcessTree(pid, with_io)
        return [] if with_io else [f"the server's I/O counters (/proc/{pid}/io) are not readable: the reads "
                                   "cross-check is skipped"]

    def read(self) -> list[Reading]:
        if self._connection is None:
            raise RuntimeError("the MariaDB sampler is not open")
        status = {_text(name): _text(value) for name, value in self._rows("SHOW GLOBAL STATUS")}
        readings = status_readings(status)
        if self._file_waits:
            rows = self._rows(_FILE_WAITS_SQL)
            readings += file_wait_readings(dict(zip(_FILE_WAIT_COLUMNS, rows[0])) if rows else None)
        ((sessions,),) = self._rows("SELECT COUNT(*) FROM information_schema.processlist WHERE db = "
                                    + self._connection.literal(self.database).decode() + " AND id <> CONNECTION_ID()")
        readings.append(Reading("client_backends", float(sessions), "count"))
        if self._server is not None:
            readings += self._server.read()
        return readings

    def _rows(self, sql: str) -> list[tuple]:
        self._connection.query(sql.encode())
        return list(self._connection.store_result().fetch_row(0))

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # close must not raise; the connection is gone either way
                pass


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


__all__ = ["MariaDBSampler", "SamplerUnavailable", "file_wait_readings", "status_readings"]
