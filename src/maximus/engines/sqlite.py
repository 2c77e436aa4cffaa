"""SQLite: the embedded engine, zero set-up. One database file per work directory and scale."""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from maximus.engines.base import Capabilities, Dialect, Engine, Session
from maximus.engines.pump import loaded_library
from maximus.errors import UserError
from maximus.knobs import Applies, Choice, Integer, Knob, KnobCatalogue, Size
from maximus.knobs.registry import parse_size
from maximus.records import ENGINE_CHECK, ENGINE_CLAUSE, CheckResult, Outcome, StorageAccess
from maximus.samplers.base import Sampler
from maximus.samplers.sqlite import SQLiteSampler

_log = logging.getLogger(__name__)  # what a user should know happened to a database (the CLI prints it)
_SIDE_FILES = ("-journal", "-wal", "-shm")
_PARTIAL = ".partial"  # a pristine copy being written
_RETRYABLE = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
# SQLite keeps busy_timeout, wal_autocheckpoint and cache_size in a C int: a value beyond it is silently
# taken as 0 (busy_timeout=2147483648 waits for no lock at all), so it is refused instead.
_INT_MAX = 2**31 - 1
# The knobs every connection sets, in this order (journal_mode first: the others apply to its mode)
_CONNECTION_PRAGMAS = ("journal_mode", "synchronous", "cache_size", "wal_autocheckpoint", "mmap_size", "locking_mode",
                       "temp_store", "busy_timeout")


def _largest_mmap() -> int:
    """This SQLite's SQLITE_MAX_MMAP_SIZE: a larger mmap_size is silently cut down to it."""
    connection = sqlite3.connect(":memory:")
    try:
        options = [row[0] for row in connection.execute("PRAGMA compile_options")]
    finally:
        connection.close()
    given = [option.split("=", 1)[1] for option in options if option.startswith("MAX_MMAP_SIZE=")]
    return int(given[0], 0) if given else 0x7FFF0000  # SQLite's own default on 64-bit Linux


_HEADER = b"SQLite format 3\x00"
# What SQLite (or the file system under it) says when the database can no longer serve a run, and what that
# means for the user; {path} is the database file, {directory} its work directory.
_FAULTS = (("database or disk is full", "the disk holding {directory} is full"),
           ("No space left on device", "the disk holding {directory} is full"),
           ("database disk image is malformed", "the database file {path} is corrupt"),
           ("file is not a database", "the database file {path} is corrupt"),
           ("disk I/O error", "the database file {path} could not be read or written"),
           ("attempt to write a readonly database", "the database file {path} could no longer be written (deleted, "
                                                    "moved or made read-only during the run?)"),
           ("unable to open database file", "the database file {path} could not be opened"))


def connection_pragmas(settings: Mapping[str, str]) -> list[str]:
    """The PRAGMA statements a connection runs before anything else, with the knobs' values (``settings``: every
    knob's, as ``Engine.effective_settings`` gives them)."""
    return [f"PRAGMA {name} = {settings[name]}" for name in _CONNECTION_PRAGMAS]


class CacheSize:
    """SQLite's cache_size: a page count, a negative KiB count, or a size with a unit (stored as -KiB)."""

    def parse(self, raw: str) -> str:
        text = raw.strip()
        value = int(text) if text.lstrip("-").isdigit() else -(parse_size(text) // 1024)
        if not -_INT_MAX - 1 <= value <= _INT_MAX:
            raise ValueError(f"expected {self.describe()}, within SQLite's {-_INT_MAX - 1}..{_INT_MAX}")
        return str(value)

    def describe(self) -> str:
        return "pages (2000), -KiB (-64000) or a size (64MB)"


SQLITE_KNOBS = KnobCatalogue("sqlite", [
    Knob("page_size", Integer(512, 65536, power_of_two=True), "4096", Applies.CREATION,
         "Database page size; fixed when the database is built.", unit="bytes"),
    Knob("cache_size", CacheSize(), "-2000", Applies.CONNECTION,
         "Page cache per connection: pages when positive, KiB when negative (SQLite's convention), "
         "or a size such as 64MB."),
    Knob("journal_mode", Choice(("delete", "truncate", "persist", "memory", "wal", "off")), "delete",
         Applies.CONNECTION, "Rollback journal variant or write-ahead log.",
         weakens_durability_when=frozenset({"memory", "off"})),
    Knob("synchronous", Choice(("off", "normal", "full", "extra"),
                               {"0": "off", "1": "normal", "2": "full", "3": "extra"}), "full",
         Applies.CONNECTION, "How hard commits are flushed to disk (fsync).",
         weakens_durability_when=frozenset({"off"})),
    Knob("wal_autocheckpoint", Integer(0, _INT_MAX), "1000", Applies.CONNECTION,
         "WAL pages after which a commit checkpoints (0 disables).", unit="pages"),
    Knob("mmap_size", Size(_largest_mmap()), "0", Applies.CONNECTION, "Bytes of the file read through mmap.",
         unit="bytes"),
    Knob("locking_mode", Choice(("normal", "exclusive")), "normal", Applies.CONNECTION,
         "exclusive keeps the file lock for the whole connection (one terminal only)."),
    Knob("temp_store", Choice(("default", "file", "memory"), {"0": "default", "1": "file", "2": "memory"}),
         "default", Applies.CONNECTION, "Where temporary tables and indexes live."),
    Knob("busy_timeout", Integer(0, _INT_MAX), "10000", Applies.CONNECTION,
         "How long a connection waits for a lock before a busy error.", unit="ms"),
])


class SQLiteSession(Session):
    """A sqlite3 connection in autocommit mode with explicit BEGIN/COMMIT."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self._handle: tuple[str, int] | None | bool = False  # False: not looked for yet

    def begin(self, read_only: bool = False, one_snapshot: bool = False) -> None:
        # Writers take the write lock up front: a deferred upgrade could deadlock against another
        # writer and end in SQLITE_BUSY without the busy handler ever waiting. A reader sees one snapshot
        # anyway (its shared lock, or its WAL read mark, lasts until the end of its transaction).
        self.connection.execute("BEGIN" if read_only else "BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.connection.execute("COMMIT")

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self.connection.execute(sql, params).rowcount

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        return self.connection.execute(sql, params).fetchone()

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.connection.execute(sql, params).fetchall()

    def library_handle(self) -> tuple[str, int] | None:
        """The connection's ``sqlite3 *`` in the libsqlite3 Python's sqlite3 module loaded (``connection_handle``)."""
        if self._handle is False:
            address = connection_handle(self.connection)
            self._handle = None if address is None else (_LIBRARY, address)
        return self._handle  # type: ignore[return-value]  # False no longer

    def close(self) -> None:
        self.connection.close()


_LIBRARY = "libsqlite3"
# The versions whose sqlite3 module keeps a connection's handle first after the object's header (connection.h)
_HANDLE_FIRST = ((3, 8), (3, 13))


def connection_handle(connection: sqlite3.Connection) -> int | None:
    """The ``sqlite3 *`` of a connection of Python's sqlite3 module, which no API of the module gives. CPython keeps
    it as the first field after the connection object's header (``Modules/_sqlite/connection.h``, 3.8 to 3.13). It
    is read on those versions only, and taken only when SQLite says it is this connection's: the same main file as
    ``PRAGMA database_list`` names, and the same transaction state. None otherwise: code that would run statements
    on it in C then runs them in Python."""
    if sys.implementation.name != "cpython" or not _HANDLE_FIRST[0] <= sys.version_info[:2] <= _HANDLE_FIRST[1] \
            or not isinstance(connection, sqlite3.Connection):  # a wrapper of one (a recording) has no such field
        return None
    library = loaded_library((_LIBRARY,))
    if library is None:  # none loaded apart (a driver with SQLite built in), or several
        return None
    address = ctypes.c_void_p.from_address(id(connection) + object.__basicsize__).value
    library.sqlite3_db_filename.restype = ctypes.c_char_p
    library.sqlite3_db_filename.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
    library.sqlite3_get_autocommit.argtypes = (ctypes.c_void_p,)
    main = next((row[2] for row in connection.execute("PRAGMA database_list") if row[1] == "main"), None)
    named = library.sqlite3_db_filename(address, b"main") if address else None
    if named is None or named.decode(errors="replace") != main:
        return None
    return address if bool(library.sqlite3_get_autocommit(address)) != connection.in_transaction else None


class SQLiteEngine(Engine):
    name = "sqlite"
    knobs = SQLITE_KNOBS
    capabilities = Capabilities(single_writer=True, server_process=False, server_side_procedures=False)
    # SQLite's NUMERIC is REAL: money is kept in integer cents. 'now' is read once per statement, to the millisecond.
    dialect = Dialect("sqlite", clustered_table_suffix=" WITHOUT ROWID", exact_decimals=False,
                      utc_now="strftime('%Y-%m-%d %H:%M:%f', 'now')")
    lock_wait_knob = "busy_timeout"
    example_knob = ("cache_size", "-4096", "-4096")

    @property
    def path(self) -> Path:
        return self.workdir / f"{self.database}.sqlite"

    def database_bytes(self, session: Session) -> int:
        return self.path.stat().st_size

    def storage_access(self) -> StorageAccess:
        """A page read is a ``pread`` of ``page_size`` bytes, through the page cache; with ``mmap_size`` above 0 the
        file is read through a map instead."""
        settings = self.effective_settings
        return StorageAccess(int(settings.get("page_size", "4096")), direct=False,
                             mapped=int(settings.get("mmap_size", "0")) > 0)

    def loss_window(self, mode: str) -> str:
        """SQLite's documentation (PRAGMA synchronous, journal_mode; "How To Corrupt"): a process crash loses nothing
        unless the journal is in memory or off; on a power cut WAL with NORMAL may roll back the commits since the last
        checkpoint, a rollback journal with FULL its last commit (the journal's unlink is not synced: EXTRA syncs its
        directory), NORMAL with a rollback journal and OFF anything, consistency included."""
        settings = self.effective_settings
        journal, synchronous = settings.get("journal_mode", "delete"), settings.get("synchronous", "full")
        if journal in ("memory", "off"):
            return f"journal_mode={journal}: a crash in a transaction can leave the database corrupt"
        if mode != "power":
            return ""
        if synchronous == "off":
            return "synchronous=off: anything the OS had not written, and possibly consistency"
        if journal == "wal" and synchronous == "normal":
            return "wal with synchronous=normal: the commits since the last checkpoint"
        if journal != "wal" and synchronous == "normal":
            return f"{journal} journal with synchronous=normal: possibly consistency"
        if journal == "delete" and synchronous == "full":
            return "delete journal with synchronous=full: the last commit, where the journal's unlink is lost"
        return ""

    @property
    def snapshot_path(self) -> Path:
        return self.workdir / f"{self.database}.pristine.sqlite"

    @classmethod
    def driver_error(cls) -> type[Exception]:
        return sqlite3.Error

    def gated(self, read_only: bool) -> bool:
        # One writer at a time; with a rollback journal a reader also blocks a committing writer.
        return not read_only or self.effective_settings["journal_mode"] != "wal"

    def validate_run(self, terminals: int) -> None:
        if self.one_connection() and terminals > 1:
            raise UserError("locking_mode=exclusive lets one connection use the database: use --terminals 1")

    def one_connection(self) -> bool:
        """The first write takes the file's lock, which the connection keeps until it closes."""
        return self.effective_settings["locking_mode"] == "exclusive"

    def watch(self) -> Callable[[], str | None]:
        """The database file as it is now: the same file (device and inode) with a SQLite header, until the end."""
        path = self.path
        known = path.stat()

        def probe() -> str | None:
            try:
                now = path.stat()
                with open(path, "rb") as file:
                    header = file.read(len(_HEADER))
            except FileNotFoundError:
                return f"the database file {path} disappeared during the run"
            except OSError as error:
                return f"the database file {path} could not be read during the run: {error.strerror}"
            if (now.st_dev, now.st_ino) != (known.st_dev, known.st_ino):
                return f"the database file {path} was replaced by another file during the run"
            if header != _HEADER:
                return f"the database file {path} is corrupt: its header was overwritten during the run"
            return None

        return probe

    def fault(self, error: str) -> str | None:
        for words, cause in _FAULTS:
            if words in error:
                first_line = error.strip().splitlines()[0]
                return f"{cause.format(path=self.path, directory=self.workdir)} ({first_line})"
        return None

    def discard_build(self) -> None:
        self.destroy()
        _remove_database_files(self.snapshot_path)

    def provision(self) -> None:
        self.destroy()
        self.workdir.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, isolation_level=None)
        try:
            connection.execute(f"PRAGMA page_size = {int(self.effective_settings['page_size'])}")
            connection.execute("VACUUM")  # makes the page size stick in an empty file
        finally:
            connection.close()

    def exists(self) -> bool:
        return self.path.exists()

    def destroy(self) -> None:
        _remove_database_files(self.path)

    def connect(self) -> SQLiteSession:
        settings = self.effective_settings
        # mode=rw: a terminal that connects after the file was deleted must not make a new, empty one in its place
        connection = sqlite3.connect(f"{self.path.absolute().as_uri()}?mode=rw", uri=True, isolation_level=None,
                                     check_same_thread=False, timeout=int(settings["busy_timeout"]) / 1000.0,
                                     cached_statements=256)
        for pragma in connection_pragmas(settings):
            connection.execute(pragma).fetchall()
        return SQLiteSession(connection)

    def integrity_check(self, session: Session) -> list[CheckResult]:
        """``PRAGMA integrity_check``: every page, index entry and constraint of every table; "ok" alone when whole,
        else up to a hundred problems, of which the first ten are kept, or the error of a file too broken to check."""
        try:
            problems = [row[0] for row in session.fetchall("PRAGMA integrity_check")]
        except sqlite3.DatabaseError as error:  # too broken to check: "database disk image is malformed"
            problems = [str(error)]
        whole = problems == ["ok"]
        return [CheckResult(ENGINE_CHECK, ENGINE_CLAUSE, "PRAGMA integrity_check: pages, indexes and constraints",
                            whole, "" if whole else "; ".join(problems[:10]))]

    def reported_settings(self, session: Session) -> dict[str, str]:
        """What SQLite reports back: proof the knobs took effect."""
        names = ("page_size", "journal_mode", "synchronous", "cache_size", "wal_autocheckpoint",
                 "mmap_size", "locking_mode", "temp_store", "busy_timeout")
        return {name: str(_own(session).connection.execute(f"PRAGMA {name}").fetchone()[0]) for name in names}

    def bulk_insert(self, session: Session, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        marks = ", ".join("?" * len(columns))
        _own(session).connection.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def classify(self, error: BaseException) -> Outcome:
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _RETRYABLE:
            return Outcome.RETRY
        return Outcome.FAILED

    def snapshot(self) -> None:
        self._copy_checkpointed(self.path, self.snapshot_path)

    def has_snapshot(self) -> bool:
        """A pristine copy SQLite can open: one cut short (a full disk, a copy by hand) would restore a database
        that fails in the middle of the run, so it is built again instead, with a note."""
        if not self.snapshot_path.exists():
            return False
        damage = _damage(self.snapshot_path)
        if damage:
            _log.info("the pristine copy %s is damaged (%s): building it again", self.snapshot_path, damage)
        return not damage

    def restore(self) -> None:
        _remove_database_files(self.path)
        _copy_or_nothing(self.snapshot_path, self.path)

    def version(self) -> str:
        return sqlite3.sqlite_version

    def data_path(self) -> Path:
        return self.workdir

    def samplers(self) -> list[Sampler]:
        settings = self.effective_settings
        return [SQLiteSampler(self.path, wal=settings["journal_mode"] == "wal",
                              exclusive=settings["locking_mode"] == "exclusive")]

    def _copy_checkpointed(self, source: Path, target: Path) -> None:
        connection = sqlite3.connect(source, isolation_level=None)
        try:
            if connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
        partial = target.with_name(target.name + _PARTIAL)
        _copy_or_nothing(source, partial)
        os.replace(partial, target)  # a copy cut short (crash, kill) never passes for a pristine one


def _damage(path: Path) -> str:
    """What is wrong with the database file at ``path`` as SQLite opens it ('' when nothing): one whose header
    counts more pages than the file holds is cut short, and SQLite says so at its first read."""
    try:
        connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as error:
        return str(error)
    try:
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return ""
    except sqlite3.DatabaseError as error:
        return str(error)
    finally:
        connection.close()


def _copy_or_nothing(source: Path, target: Path) -> None:
    """A copy that fails (a full disk) leaves no half of itself filling the file system."""
    try:
        shutil.copyfile(source, target)
    except BaseException:
        target.unlink(missing_ok=True)
        raise


def _remove_database_files(path: Path) -> None:
    for candidate in (path, *(path.with_name(path.name + suffix) for suffix in (*_SIDE_FILES, _PARTIAL))):
        candidate.unlink(missing_ok=True)


def _own(session: Session) -> SQLiteSession:
    """A session of this engine's, as its settings and bulk loads need it (its sqlite3 connection)."""
    if not isinstance(session, SQLiteSession):
        raise TypeError(f"not a SQLite session: {session!r}")
    return session
