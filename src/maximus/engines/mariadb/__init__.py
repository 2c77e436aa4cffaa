"""MariaDB: a managed server of Maximus's own per database, or a server the user owns (a DSN).

The engine reaches its server through the shared server layer (``engines/server/``), chosen once when the engine is
built: ``ManagedServer`` (``managed.py``) or ``ExternalServer`` (``external.py``), both reached by MySQLdb's connection
arguments (``servers.py``). Sessions, which run the statements a workload writes for MariaDB, are in ``sessions.py``,
the variables' types and the knob catalogue in ``settings.py``.

Each Maximus database has a pristine copy that every run's restore starts from (``pristine.py``): its tables'
InnoDB files on a managed server, a twin database on a server of the user's.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from maximus.engines._copy_text import copy_text
from maximus.engines.mariadb import integrity
from maximus.engines.base import Capabilities, Dialect, Driver, Session
from maximus.engines.mariadb.external import ExternalServer
from maximus.engines.mariadb.managed import ManagedServer
from maximus.engines.mariadb.privileges import AdminConnection, probe
from maximus.engines.mariadb.pristine import TablespaceCopy, TwinDatabase, tables_of
from maximus.engines.mariadb.servers import MariaDBServer, connect
from maximus.engines.mariadb.sessions import SQL_MODE, UTC_NOW, MariaDBSession, array_of_ints
from maximus.engines.mariadb.settings import DURABILITY, LOG_BIN, PAGE_SIZE, SYNC_BINLOG, read_only
from maximus.engines.pump import Pump
from maximus.engines.server import ServerEngine, allow_changes_option, dsn_option
from maximus.errors import EngineError
from maximus.records import CheckResult, Outcome, StorageAccess

_RETRYABLE = {1213, 1205, 1020}  # deadlock found, lock wait timeout exceeded, record changed since last read
# (a write conflict under innodb_snapshot_isolation=ON): each rolled back, to be run again
# error codes are matched as the driver writes them, "(2013, ": a bare number could be in a key's value
_REPORTED = ("version", "innodb_buffer_pool_size", "innodb_log_file_size", "innodb_log_buffer_size",
             "innodb_flush_log_at_trx_commit", "innodb_flush_method", "innodb_doublewrite", "innodb_page_size",
             "innodb_io_capacity", "innodb_read_io_threads", "innodb_write_io_threads", "innodb_use_native_aio",
             "sync_binlog", "log_bin", "tx_isolation", "max_connections", "performance_schema")


@functools.cache
def _literals() -> Callable[[Sequence[Any]], tuple[bytes, ...]]:
    from maximus.engines.mariadb.literals import call_parameters

    return call_parameters


def call_parameters(params: Sequence[Any]) -> tuple[bytes, ...]:
    """A call's parameters as SQL literals (``literals.py``), which needs the driver: imported at the first call."""
    return _literals()(params)


class MariaDBEngine(ServerEngine):
    """Connection options: ``dsn`` (external mode) and ``allow_changes`` (external mode: set the knobs with SET GLOBAL,
    put back after the run)."""

    name = "mariadb"
    connection_options = (
        dsn_option("MariaDB", "its URL (mysql://user:password@host:port/database)"),
        allow_changes_option("MariaDB", "SET GLOBAL"),
    )
    driver = Driver("MySQLdb", "mariadb", ("libmariadb-dev", "pkg-config"))
    capabilities = Capabilities(single_writer=False, server_process=True, server_side_procedures=True,
                                split_calls=True)
    dialect = Dialect("mariadb", for_update=" FOR UPDATE", call_parameters=call_parameters, utc_now=UTC_NOW,
                      datetime_type="DATETIME(6)", array_of_ints=array_of_ints)
    lock_wait_knob = "innodb_lock_wait_timeout"
    short_lock_wait = "1"  # seconds: InnoDB's shortest wait that still waits (0 fails at once)
    example_knob = ("innodb_lock_wait_timeout", "7", "7")
    managed, external = ManagedServer, ExternalServer
    server: MariaDBServer

    # -- knobs ---------------------------------------------------------------------------------------

    @classmethod
    def documented_knobs(cls) -> list[str]:
        return [*sorted(DURABILITY), SYNC_BINLOG, LOG_BIN, PAGE_SIZE]

    def durability_warnings(self) -> list[str]:
        """The catalogue's, and ``sync_binlog`` other than 1 with the binary log on: a commit then returns before
        its binary log is on disk, and a crash loses what a replica or a point-in-time recovery would need."""
        warnings = super().durability_warnings()
        settings = self.effective_settings
        if settings.get(LOG_BIN) == "ON" and settings.get(SYNC_BINLOG, "0") != "1":
            warnings.append(f"{SYNC_BINLOG}={settings.get(SYNC_BINLOG, '0')} with {LOG_BIN}=ON weakens durability")
        return warnings

    def database_bytes(self, session: Session) -> int:
        row = session.fetchone("SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables "
                               "WHERE table_schema = DATABASE()")
        return int(row[0]) if row else 0

    def storage_access(self) -> StorageAccess:
        """InnoDB reads a page of ``innodb_page_size`` (16 KiB by default), directly (O_DIRECT) under the flush methods
        that open the data files so, which is MariaDB's default."""
        settings = self.effective_settings
        direct = settings.get("innodb_flush_method", "O_DIRECT").upper() in ("O_DIRECT", "O_DIRECT_NO_FSYNC")
        return StorageAccess(int(settings.get("innodb_page_size", "16384")), direct=direct)

    def loss_window(self, mode: str) -> str:
        """MariaDB's documentation (innodb_flush_log_at_trx_commit, innodb_doublewrite): 2 writes the log at commit and
        flushes it about once a second, so a power cut loses up to a second of commits and a server crash nothing; 0
        writes it only once a second, so any crash loses up to a second; without the doublewrite buffer a page torn on
        a power cut cannot be repaired."""
        settings = self.effective_settings
        flush = settings.get("innodb_flush_log_at_trx_commit", "1")
        windows = []
        if flush == "0" or (flush == "2" and mode == "power"):
            windows.append(f"innodb_flush_log_at_trx_commit={flush}: about a second of commits"
                           f"{' on any crash' if flush == '0' else ' on a power cut'}")
        if mode == "power" and settings.get("innodb_doublewrite", "ON") in ("OFF", "0"):
            windows.append("innodb_doublewrite=OFF: a page torn on a power cut is not repaired")
        if settings.get("innodb_flush_method") in ("nosync", "littlesync") and mode == "power":
            windows.append(f"innodb_flush_method={settings['innodb_flush_method']}: no fsync, anything on a power cut")
        return "; ".join(windows)

    @property
    def effective_settings(self) -> dict[str, str]:
        """Once the server is up, what it reports (SHOW GLOBAL VARIABLES): a value it adjusted (a size rounded to its
        block, a value clamped) is the one it runs with, and the one the run records. The value asked stays the run's
        knob (``settings``, recorded apart), and a difference is a warning of the run (``reported_otherwise``).
        Before, the defaults, the run's knobs and what Maximus chooses for a managed server."""
        chosen = self.server.chosen_settings()
        if self._server_settings is not None:
            return {**chosen, **self.settings, **self._server_settings}
        return {**super().effective_settings, **chosen, **self.settings}

    def isolation(self, one_snapshot: bool, procedure: bool) -> str:
        """The server's default level (``tx_isolation``), or repeatable read for a client-side transaction that must
        see one snapshot where the default gives each statement its own."""
        default = self.effective_settings.get("tx_isolation", "REPEATABLE-READ")
        level = "REPEATABLE-READ" if one_snapshot and not procedure and default in ("READ-COMMITTED",
                                                                                   "READ-UNCOMMITTED") else default
        return level.lower().replace("-", " ")

    # -- where things live ---------------------------------------------------------------------------

    def samplers(self) -> list:
        from maximus.samplers.mariadb import MariaDBSampler

        return [MariaDBSampler(lambda: connect(self.server.connect_arguments()), self.database, self.server.pid,
                               "performance_schema" in self.server.chosen_settings())]

    # -- server lifecycle ----------------------------------------------------------------------------

    def read_server(self) -> tuple[dict[str, str], str | None]:
        """SHOW GLOBAL VARIABLES: the knobs' values, and the version (``10.11.19`` of ``10.11.19-MariaDB-...``)."""
        with self._admin() as admin:
            admin.query(b"SHOW GLOBAL VARIABLES")
            rows = admin.store_result().fetch_row(0)
        found = {_text(name): _text(value) for name, value in rows}
        if read_only(found):  # a server of the user's that runs so: no knob of the run's asked for it
            raise EngineError(f"the MariaDB server runs with {read_only(found)}: it refuses every write, and a "
                              "benchmark writes (its build, its restores, its transactions): use a server that takes "
                              "writes")
        return ({name: value for name, value in found.items() if name in self.knobs},
                found.get("version", "").split("-")[0] or None)

    # -- databases -----------------------------------------------------------------------------------

    def _admin(self) -> AdminConnection:
        """A connection for Maximus's own statements on its database: one its user may not run is one line."""
        return AdminConnection(connect(self.server.connect_arguments()), self.database)

    @property
    def _pristine(self) -> TablespaceCopy | TwinDatabase:
        files = self.server.pristine_files()
        if files is None:
            return TwinDatabase(self._admin, self.database)
        data_dir, directory, own = files
        return TablespaceCopy(self._admin, self.database, data_dir, directory, own)

    def provision(self) -> None:
        with self._admin() as admin:
            admin.query(f"DROP DATABASE IF EXISTS `{self.database}`".encode())
            admin.query(f"CREATE DATABASE `{self.database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin".encode())
            probe(admin)  # a privilege the user lacks (a --dsn's) is one line now, not a traceback in the loader

    def discard_build(self) -> None:
        """A managed server's data directory holds this database alone: it is removed whole, with the pristine copy
        (the next start makes it again). Dropping the database would leave what the load's undo took in InnoDB's
        system tablespace (tens of MB), which InnoDB never gives back, and a server that a full disk aborted (a
        rollback that finds no space) drops nothing. On a server of the user's, the database and its twin dropped."""
        if self.server.remove_data():
            self._pristine.destroy()
        else:
            super().discard_build()

    def exists(self) -> bool:
        with self._admin() as admin:
            return bool(tables_of(admin, self.database))

    def destroy(self) -> None:
        with self._admin() as admin:
            admin.query(f"DROP DATABASE IF EXISTS `{self.database}`".encode())
        self._pristine.destroy()

    def has_snapshot(self) -> bool:
        return self._pristine.exists()

    def keep_as_pristine(self) -> None:
        self._pristine.keep()

    def snapshot(self) -> None:
        self._pristine.snapshot()

    def restore(self) -> None:
        self._pristine.restore()

    def connect(self) -> MariaDBSession:
        arguments = self.server.connect_arguments()
        connection = connect(arguments, self.database)
        try:
            connection.query(SQL_MODE.encode())
        except Exception as error:
            connection.close()
            raise EngineError(f"cannot connect to MariaDB: {error.args[-1]}") from None

        def kill(thread_id: int) -> None:
            with _Closing(connect(arguments)) as other:
                other.query(f"KILL QUERY {int(thread_id)}".encode())

        return MariaDBSession(connection, kill)

    def bulk_insert(self, session: Session, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        rows = list(rows)
        placeholders = "(" + ", ".join(["?"] * len(columns)) + ")"
        for first in range(0, len(rows), 500):
            chunk = rows[first:first + 500]
            values = ", ".join([placeholders] * len(chunk))
            session.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values}",
                            [value for row in chunk for value in row])

    def bulk_insert_columns(self, session: Session, table: str, columns: Sequence[str],
                            values: Sequence[np.ndarray]) -> None:
        """LOAD DATA LOCAL INFILE of text made by numpy from the columns (PostgreSQL's COPY text is LOAD DATA's
        default format): no Python object per value."""
        text = copy_text(values)
        if text is None or not isinstance(session, MariaDBSession):
            super().bulk_insert_columns(session, table, columns, values)
            return
        session.load_data(table, columns, text)

    def call_pump(self) -> Pump:
        from maximus.engines.mariadb.pump import call_pump

        return call_pump()

    def classify(self, error: BaseException) -> Outcome:
        code = error.args[0] if getattr(error, "args", None) else None
        return Outcome.RETRY if code in _RETRYABLE else Outcome.FAILED

    def integrity_check(self, session: Session) -> list[CheckResult]:
        return integrity.integrity_check(session, self.driver_error())

    def reported_settings(self, session: Session) -> dict[str, str]:
        """The variables a DBA looks at first and the run's knobs, as SHOW VARIABLES gives them."""
        names = list(dict.fromkeys([*_REPORTED, *(name for name in self.settings if name != LOG_BIN)]))
        rows = session.fetchall("SELECT LOWER(variable_name), variable_value FROM information_schema.global_variables "
                                "WHERE LOWER(variable_name) IN (" + ", ".join(["?"] * len(names)) + ")", names)
        found = {_text(name): _text(value) for name, value in rows}
        session_values = dict(session.fetchall("SELECT LOWER(variable_name), variable_value FROM "
                                               "information_schema.session_variables WHERE LOWER(variable_name) IN (" +
                                               ", ".join(["?"] * len(names)) + ")", names))
        found.update({_text(name): _text(value) for name, value in session_values.items()})
        return {name: found[name] for name in names if name in found}


class _Closing:
    """A MySQLdb connection as a context manager that closes it (MySQLdb's own does not)."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def __enter__(self) -> Any:
        return self.connection

    def __exit__(self, *exc: object) -> None:
        self.connection.close()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else "" if value is None else str(value)


__all__ = ["ExternalServer", "MariaDBEngine", "MariaDBServer", "ManagedServer", "MariaDBSession"]
