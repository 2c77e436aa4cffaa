"""PostgreSQL: a managed throwaway cluster in the work directory, or a server the user owns (a DSN).

The engine reaches its server through the shared server layer (``engines/server/``), chosen once when the engine is
built: ``ManagedServer`` (``managed.py``) or ``ExternalServer`` (``external.py``), both reached by a connection string
(``servers.py``). Its sessions are in
``sessions.py``, the bridge to the C pump over libpq in ``pump.py``, the settings' types and units in
``settings.py`` and the knob catalogue in ``catalogue.py``.

Inside the server each Maximus database has a pristine twin (``<name>_pristine``); ``restore()``
recreates the working database from it with ``CREATE DATABASE ... TEMPLATE`` (a file copy). A build
renames the database it loaded into the pristine twin (``keep_as_pristine``) rather than copying it: the
run's restore makes the working copy anyway. The pristine twin takes no connections, so autovacuum leaves
it alone: its freshly loaded tables would otherwise be vacuumed in the middle of the first run after a
build, and every later run would restore a copy that the first one did not have.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterable, Sequence

import numpy as np

from maximus.engines._copy_text import copy_text
from maximus.engines.base import Capabilities, ConnectionOption, Dialect, Driver, Session
from maximus.engines.postgres import integrity, pump
from maximus.engines.postgres.catalogue import DURABILITY
from maximus.engines.postgres.external import ExternalServer, system_service_in
from maximus.engines.postgres.managed import ManagedServer
from maximus.engines.postgres.pump import LibpqPump
from maximus.engines.postgres.servers import PostgresServer
from maximus.engines.postgres.sessions import (PER_STATEMENT_SNAPSHOTS, UTC_NOW, PostgresAsyncSession,
                                               PostgresSession, _c_text_parameters, _text_parameters,
                                               array_of_ints)
from maximus.engines.postgres.settings import BIN_DIR, find_bin_dir, plain_version, server_knobs, written
from maximus.engines.pump import Pump
from maximus.engines.server import ServerEngine, allow_changes_option, dsn_option
from maximus.errors import EngineError
from maximus.records import CheckResult, Outcome, StorageAccess
from maximus.samplers.base import Sampler
from maximus.samplers.postgres import IO_TIMING, WAL_IO_TIMING, PostgresSampler

_RETRYABLE_STATES = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available
_REPORTED = ("server_version", "shared_buffers", "wal_buffers", "max_wal_size", "checkpoint_timeout",
             "synchronous_commit", "fsync", "full_page_writes", "wal_level", "effective_io_concurrency",
             "default_transaction_isolation", "max_connections", IO_TIMING, WAL_IO_TIMING)


class PostgresEngine(ServerEngine):
    """Connection options: ``dsn`` (external mode), ``bin_dir`` (managed mode), ``allow_changes`` (external mode:
    set the knobs with ALTER SYSTEM and reload; off unless the user says so) and ``allow_restart`` (external
    mode: also restart a server on this machine for knobs that need it)."""

    name = "postgres"
    connection_options = (
        dsn_option("PostgreSQL", "its connection string (host=db1 user=bench dbname=postgres)"),
        ConnectionOption("bin_dir", "PostgreSQL: directory of initdb/pg_ctl/postgres for managed mode [default: "
                         "discovered].", kind="path"),
        allow_changes_option("PostgreSQL", "ALTER SYSTEM and reload"),
        ConnectionOption("allow_restart", "PostgreSQL external mode: also restart your server (on this machine) for "
                         "knobs that need it, and again after the run; implies --allow-changes.", kind="flag",
                         implies="allow_changes"),
    )
    driver = Driver("psycopg", "postgres")  # psycopg[binary]: its wheels bring libpq
    capabilities = Capabilities(single_writer=False, server_process=True, server_side_procedures=True,
                                async_sessions=True, split_calls=True)
    dialect = Dialect("postgres", for_update=" FOR UPDATE", primary_keys_after_load=True,
                      call_parameters=_c_text_parameters or _text_parameters, utc_now=UTC_NOW,
                      array_of_ints=array_of_ints)
    lock_wait_knob = "lock_timeout"
    example_knob = ("work_mem", "8192kB", "8MB")
    managed, external = ManagedServer, ExternalServer
    server: PostgresServer

    @classmethod
    def documented_knobs(cls) -> list[str]:
        return [*sorted(DURABILITY), BIN_DIR]

    # -- where things live ---------------------------------------------------------------------------

    @property
    def pristine(self) -> str:
        return f"{self.database}_pristine"

    @property
    def effective_settings(self) -> dict[str, str]:
        """Once the server is up, what it reports in pg_settings, with the run's knobs as the user spelled
        them: a server of the user's runs with its own configuration, not PostgreSQL's defaults. Before,
        the defaults, the run's knobs and the timing settings a managed server gets for monitoring."""
        if self._server_settings is not None:
            return {**self._server_settings, **self.server.chosen_settings(), **self.settings}
        return {**super().effective_settings, **self.server.monitoring_settings()}

    def database_bytes(self, session: Session) -> int:
        row = session.fetchone("SELECT pg_database_size(current_database())")
        return int(row[0]) if row else 0

    def storage_access(self) -> StorageAccess:
        """A backend reads a page of ``block_size`` (8 KiB unless built otherwise) with a buffered ``pread``."""
        return StorageAccess(int(self.effective_settings.get("block_size", "8192")), direct=False)

    def loss_window(self, mode: str) -> str:
        """PostgreSQL's documentation (Asynchronous Commit; WAL Configuration): ``synchronous_commit=off`` loses up
        to three times ``wal_writer_delay`` of commits on any crash; ``fsync=off`` and ``full_page_writes=off`` lose
        what the OS had not written, and may leave the data corrupt, on a power cut."""
        settings = self.effective_settings
        windows = []
        if settings.get("synchronous_commit", "on") == "off":
            delay = settings.get("wal_writer_delay", "200ms")
            unit = "ms" if delay.isdigit() else ""
            windows.append(f"synchronous_commit=off: up to 3 x wal_writer_delay ({delay}{unit}) of commits on any "
                           "crash")
        if mode == "power" and settings.get("fsync", "on") == "off":
            windows.append("fsync=off: whatever the OS had not written, and possibly consistency, on a power cut")
        if mode == "power" and settings.get("full_page_writes", "on") == "off":
            windows.append("full_page_writes=off: a page torn on a power cut is not repaired from the WAL")
        return "; ".join(windows)

    def samplers(self) -> list[Sampler]:
        """The server's statistics views, its sessions' wait events and (managed mode) its processes."""
        return [PostgresSampler(lambda: self._dsn("postgres"), self.database, self.server.pid_file(),
                                tuple(self.server.monitoring_settings()))]

    # -- server lifecycle ----------------------------------------------------------------------------

    def read_server(self) -> tuple[dict[str, str], str | None]:
        """Every knob's value as pg_settings gives it, in the largest unit that divides it, as the catalogue's
        defaults are (shared_buffers' 16384 pages are ``128MB``); and the server's version."""
        with self._admin() as admin:
            rows = dict(admin.execute("SELECT name, setting FROM pg_settings").fetchall())
        return ({name: written(self.knobs.get(name), setting) for name, setting in rows.items() if name in self.knobs},
                plain_version(rows["server_version"]))

    def discard_build(self) -> None:
        """On a full disk the DROP DATABASE of ``destroy()`` cannot run: it starts with a checkpoint, which writes
        files, and fails (the server even PANICs). Dropped tables give their space back at their commit (their
        files are emptied then, removed at the next checkpoint), and dropping them writes no data file."""
        import psycopg

        if self._database_exists(self.database):
            with contextlib.suppress(psycopg.Error), \
                    psycopg.connect(self._dsn(self.database), autocommit=True) as session:
                tables = [row[0] for row in session.execute(
                    "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables "
                    "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").fetchall()]
                if tables:
                    session.execute(f"DROP TABLE {', '.join(tables)} CASCADE")
        self.destroy()

    # -- databases -----------------------------------------------------------------------------------

    def _dsn(self, database: str) -> str:
        return self.server.dsn(database)

    def _admin(self) -> Any:
        return self.server.admin()

    def _database_exists(self, name: str) -> bool:
        with self._admin() as admin:
            return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None

    def provision(self) -> None:
        with self._admin() as admin:
            _drop(admin, self.database)
            admin.execute(f'CREATE DATABASE "{self.database}"')

    def exists(self) -> bool:
        return self._database_exists(self.database)

    def destroy(self) -> None:
        with self._admin() as admin:
            for name in (self.database, self.pristine):
                _drop(admin, name)

    def snapshot(self) -> None:
        with self._admin() as admin:
            _copy_database(admin, self.database, self.pristine)
            _out_of_autovacuums_reach(admin, self.pristine)

    def keep_as_pristine(self) -> None:
        """A rename: no file copy, and no checkpoint when there is no older pristine copy to drop (a build
        drops it before it loads). The loaded data reaches the data files at the next checkpoint, at the
        latest the first restore's, which every copy begins with."""
        with self._admin() as admin:
            _drop(admin, self.pristine)
            admin.execute(f'ALTER DATABASE "{self.database}" RENAME TO "{self.pristine}"')
            _out_of_autovacuums_reach(admin, self.pristine)

    def has_snapshot(self) -> bool:
        return self._database_exists(self.pristine)

    def restore(self) -> None:
        with self._admin() as admin:
            _out_of_autovacuums_reach(admin, self.pristine)  # a copy kept by an older Maximus took connections
            _copy_database(admin, self.pristine, self.database)

    def connect(self) -> PostgresSession:
        import psycopg

        try:
            return PostgresSession(psycopg.connect(self._dsn(self.database), autocommit=True))
        except psycopg.OperationalError as error:
            raise EngineError(f"cannot connect to PostgreSQL: {str(error).strip().splitlines()[-1]}") from None

    async def connect_async(self) -> PostgresAsyncSession:
        import psycopg

        try:
            return PostgresAsyncSession(await psycopg.AsyncConnection.connect(self._dsn(self.database),
                                                                            autocommit=True))
        except psycopg.OperationalError as error:
            raise EngineError(f"cannot connect to PostgreSQL: {str(error).strip().splitlines()[-1]}") from None

    def bulk_insert(self, session: Session, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        cursor = _own(session).connection.cursor()
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def bulk_insert_columns(self, session: Session, table: str, columns: Sequence[str],
                            values: Sequence[np.ndarray]) -> None:
        """COPY text made by numpy from the columns: no Python object per value, unlike write_row."""
        text = copy_text(values)
        if text is None:  # a value the fast path does not format: the rows path stores the same rows
            super().bulk_insert_columns(session, table, columns, values)
            return
        cursor = _own(session).connection.cursor()
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            copy.write(text)

    def call_pump(self) -> Pump:
        return pump.call_pump()

    def classify(self, error: BaseException) -> Outcome:
        return Outcome.RETRY if getattr(error, "sqlstate", None) in _RETRYABLE_STATES else Outcome.FAILED

    def isolation(self, one_snapshot: bool, procedure: bool) -> str:
        """The server's default level (``default_transaction_isolation``), or repeatable read for a client-side
        transaction that must see one snapshot where the default gives each statement its own."""
        default = self.effective_settings.get("default_transaction_isolation", "read committed")
        return "repeatable read" if one_snapshot and not procedure and default in PER_STATEMENT_SNAPSHOTS \
            else default

    def integrity_check(self, session: Session) -> list[CheckResult]:
        return integrity.integrity_check(session, self.driver_error())

    def reported_settings(self, session: Session) -> dict[str, str]:
        """The settings a DBA looks at first and the run's knobs, as ``SHOW`` spells them (``2GB``)."""
        names = list(dict.fromkeys([*_REPORTED, *server_knobs(self.settings)]))
        found = dict(session.fetchall("SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(?)",
                                      (names,)))
        return {name: found[name] for name in names if name in found}


def _drop(admin: Any, database: str) -> None:
    """Sessions still on it are ended. Dropping a database that exists forces a checkpoint."""
    admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _copy_database(admin: Any, source: str, target: str) -> None:
    _drop(admin, target)
    admin.execute(f'CREATE DATABASE "{target}" TEMPLATE "{source}" STRATEGY FILE_COPY')


def _out_of_autovacuums_reach(admin: Any, database: str) -> None:
    """No connections to ``database``, so autovacuum skips it, as it skips template0 (but for wraparound).

    The load leaves every table of a pristine copy with all its rows inserted since its last vacuum, which
    is what autovacuum's insert threshold looks for: in the first run after a build it vacuumed the
    pristine copy (12 s of the measured window at 4 warehouses) and set its hint bits and visibility map,
    so the runs after the first restored other data than the first. CREATE DATABASE ... TEMPLATE copies a
    database that takes no connections all the same."""
    allows = admin.execute("SELECT datallowconn FROM pg_database WHERE datname = %s", (database,)).fetchone()
    if allows and allows[0]:
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')


__all__ = ["BIN_DIR", "ExternalServer", "LibpqPump", "ManagedServer", "PostgresAsyncSession", "PostgresEngine",
           "PostgresServer", "PostgresSession", "find_bin_dir", "system_service_in"]


def _own(session: Session) -> PostgresSession:
    """A session of this engine's, as its bulk loads need it (its psycopg connection)."""
    if not isinstance(session, PostgresSession):
        raise TypeError(f"not a PostgreSQL session: {session!r}")
    return session
