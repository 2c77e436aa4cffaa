"""PostgreSQL: a managed throwaway cluster in the work directory, or a server the user owns (a DSN).

Managed mode: Maximus runs ``initdb`` once per work directory and PostgreSQL version, writes the run's
knobs into ``maximus.conf`` (included by ``postgresql.conf``), starts the server on a free loopback
port as an unprivileged user when invoked as root, and stops it when done. A server left behind by a
Maximus that was killed is found by its ``postmaster.pid`` in our data directory and stopped.

Inside the cluster each Maximus database has a pristine twin (``<name>_pristine``); ``restore()``
recreates the working database from it with ``CREATE DATABASE ... TEMPLATE`` (a file copy). A build
renames the database it loaded into the pristine twin (``keep_as_pristine``) rather than copying it: the
run's restore makes the working copy anyway. The pristine twin takes no connections, so autovacuum leaves
it alone: its freshly loaded tables would otherwise be vacuumed in the middle of the first run after a
build, and every later run would restore a copy that the first one did not have.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import math
import os
import pwd
import re
import select
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from maximus.engines import _process
from maximus.engines._copy_text import copy_text
from maximus.engines.base import AsyncSession, Capabilities, Dialect, Engine, Session
from maximus.engines.pump import FAILED, Event, Pump, PythonPump
from maximus.errors import EngineError, UserError
from maximus.knobs import Applies, Knob, KnobCatalogue
from maximus.records import Outcome
from maximus.samplers.base import Sampler
from maximus.samplers.postgres import IO_TIMING, WAL_IO_TIMING, PostgresSampler

_log = logging.getLogger(__name__)  # what a user should know happened to a server (the CLI prints it)
_RETRYABLE_STATES = {"40001", "40P01", "55P03"}  # serialization failure, deadlock, lock not available
UTC_NOW = "(now() AT TIME ZONE 'UTC')"  # the transaction's start, to the microsecond, as TIMESTAMP columns hold it
_PER_STATEMENT_SNAPSHOTS = {"read committed", "read uncommitted"}
_SNAPSHOT_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ"
_CONTEXT = {"postmaster": Applies.RESTART, "sighup": Applies.RELOAD, "superuser": Applies.RELOAD,
            "user": Applies.RELOAD, "superuser-backend": Applies.RELOAD, "backend": Applies.RELOAD}
_DURABILITY = {"fsync": {"off"}, "synchronous_commit": {"off"}, "full_page_writes": {"off"}}
_BOOLEANS = {"on": "on", "off": "off", "true": "on", "false": "off", "yes": "on", "no": "off", "1": "on",
             "0": "off", "t": "on", "f": "off"}
_MEMORY_KB = {"b": 1 / 1024, "kb": 1, "mb": 1024, "gb": 1024 ** 2, "tb": 1024 ** 3}
_SPELLING = {"b": "B", "kb": "kB", "mb": "MB", "gb": "GB", "tb": "TB"}  # postgresql.conf's
_TIME_MS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
# A session's error that means the server, not the transaction, failed: psycopg's classes for SQLSTATE class 57
# (operator intervention) and libpq's words for a connection that broke.
_LOST = ("AdminShutdown", "CrashShutdown", "CannotConnectNow", "server closed the connection",
         "connection is lost", "connection is closed", "the connection to the server was lost", "consuming input failed",
         "terminating connection", "SSL SYSCALL error", "could not receive data from server", "no connection to the server")
_FULL = ("DiskFull", "No space left on device")
_CORRUPT = ("DataCorrupted", "IndexCorrupted")
# How a managed server's log says that it stopped, or that it ended every session to recover from a crash.
_STOPPED = ("shutdown request", "PANIC:  ", "unexpected postmaster exit")
_CRASHED = ("was terminated by signal", "terminating any other active server processes")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a line of postgresql.conf ends at a newline; the others are mangled
BIN_DIR = "bin_dir"  # a knob of Maximus's, not a GUC: which installation runs a managed server
_SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
_REPORTED = ("server_version", "shared_buffers", "wal_buffers", "max_wal_size", "checkpoint_timeout",
             "synchronous_commit", "fsync", "full_page_writes", "wal_level", "effective_io_concurrency",
             "default_transaction_isolation", "max_connections", IO_TIMING, WAL_IO_TIMING)
# What the sampler needs to time data-file reads and WAL writes and syncs; a managed server gets them on
# unless the run's knobs say otherwise (the sampler's notes then record that Maximus did it).
_MONITORING_SETTINGS = {IO_TIMING: "on", WAL_IO_TIMING: "on"}


@dataclass(frozen=True)
class PgValue:
    """A GUC's type as pg_settings describes it; values keep PostgreSQL's own syntax (e.g. ``2GB``)."""

    vartype: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    enumvals: tuple[str, ...] = ()

    def parse(self, raw: str) -> str:
        if _CONTROL.search(raw):
            raise ValueError("expected a value without a newline or other control character, which postgresql.conf "
                             "cannot hold")
        text = raw.strip()
        if self.vartype == "bool":
            if text.lower() not in _BOOLEANS:
                raise ValueError("expected on or off")
            return _BOOLEANS[text.lower()]
        if self.vartype == "enum":
            spelled = {value.lower(): value for value in self.enumvals}  # PostgreSQL's spelling, e.g. TLSv1.2
            if text.lower() not in spelled:
                raise ValueError(f"expected one of {', '.join(self.enumvals)}")
            return spelled[text.lower()]
        if self.vartype in ("integer", "real"):
            self._check_number(text)
        return text

    def _check_number(self, text: str) -> None:
        value = self._amount(text)
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise ValueError(f"expected {self.describe()}")

    def _amount(self, text: str) -> float:
        """``text`` (``2GB``, ``15min``, ``0.9``) in the GUC's own units."""
        match = _NUMBER.match(text)
        if not match:
            raise ValueError(f"expected a number{self._unit_hint()}")
        return float(match.group(1)) * self._scale(match.group(2))

    def same(self, asked: str, reported: str) -> bool:
        """Whether ``SHOW``'s ``reported`` value is the ``asked`` one: numbers in the GUC's units (``2048MB`` is
        ``2GB``), where a negative one asks the server to compute it (``wal_buffers = -1``); the server's
        spelling of a string is not a change (``utc`` is shown ``UTC``)."""
        try:
            if self.vartype in ("integer", "real"):
                wanted = self._amount(asked)
                return wanted < 0 or math.isclose(wanted, self._amount(reported), rel_tol=1e-9)
            if self.vartype in ("bool", "enum"):
                return self.parse(asked) == self.parse(reported)
        except ValueError:
            pass
        return asked.strip().lower() == reported.strip().lower()

    def _scale(self, given: str) -> float:
        """How many of the GUC's own units one ``given`` unit is."""
        if not given:
            return 1.0
        table, own = self._units()
        if given.lower() not in table or own is None:
            raise ValueError(f"unit {given!r} does not fit{self._unit_hint()}")
        return table[given.lower()] / own

    def _units(self) -> tuple[Mapping[str, float], float | None]:
        """The table of units of the GUC's kind (memory in kB, time in ms), and its own unit in that table's
        measure (``8kB`` is 8); None when the table does not know it."""
        table = _MEMORY_KB if self.unit.lower().endswith("b") else _TIME_MS
        base_unit = self.unit.lower().lstrip("0123456789")
        multiple = float(self.unit[:-len(base_unit)] or 1) if base_unit else 1.0
        return table, table[base_unit] * multiple if base_unit in table else None

    def _unit_hint(self) -> str:
        return f" (unit {self.unit})" if self.unit else ""

    def describe(self) -> str:
        if self.enumvals:
            return ", ".join(self.enumvals)
        if self.vartype == "bool":
            return "on or off"
        if self.minimum is not None:
            spelled = f"between {_exact(self.minimum)} and {_exact(self.maximum)}{self._unit_hint()}"
            scaled = [self._spelled(self.minimum), self._spelled(self.maximum)]
            return spelled + (f", {scaled[0]} to {scaled[1]}" if None not in scaled else "")
        return self.vartype

    def _spelled(self, value: float | None) -> str | None:
        """``value`` of the GUC's units in the largest unit that keeps it at least 1, as postgresql.conf takes
        it (``128kB``, ``8TB``, ``1d``); None for a GUC without a unit or a negative value."""
        if value is None or value < 0:
            return None
        return "0" if value == 0 and self.unit else self._in_largest_unit(value, lambda amount: amount >= 1)

    def spelled_exactly(self, raw: str) -> str:
        """``raw`` of the GUC's units in the largest unit that divides it, as postgresql.conf.sample writes a
        default (shared_buffers' 16384 pages are ``128MB``, checkpoint_timeout's 300 s ``5min``); unchanged
        without a unit or when not positive (``-1`` often means "computed from another setting")."""
        try:
            value = float(raw)
        except ValueError:
            return raw
        spelled = self._in_largest_unit(value, float.is_integer) if value > 0 else None
        return spelled or raw

    def _in_largest_unit(self, value: float, fits: Callable[[float], bool]) -> str | None:
        """``value`` (positive, of the GUC's units) in the largest unit of its kind whose amount ``fits``."""
        table, own = self._units()
        if not self.unit or own is None:
            return None
        amounts = {unit: value * own / table[unit] for unit in table}
        unit = max((u for u in table if fits(amounts[u])), key=table.__getitem__, default=None)
        if unit is None:
            return None
        amount = amounts[unit]
        return (f"{amount:.4g}" if amount < 10_000 else f"{amount:.0f}") + _SPELLING.get(unit, unit)


def _exact(value: float | None) -> str:
    """``1073741823``, not ``1.07374e+09``: an integer setting's bound as pg_settings gives it."""
    return "" if value is None else str(int(value)) if float(value).is_integer() else f"{value:.15g}"


def _knob(row: Mapping[str, Any]) -> Knob:
    value_type = PgValue(row["vartype"], row["unit"] or "", _float(row["min_val"]), _float(row["max_val"]),
                         tuple(row["enumvals"] or ()))
    default = value_type.spelled_exactly(row["boot_val"] or "")
    return Knob(row["name"], value_type, default, _CONTEXT.get(row["context"], Applies.RESTART),
                row["short_desc"] or "", row["unit"] or "", frozenset(_DURABILITY.get(row["name"], ())))


def _float(value: Any) -> float | None:
    return None if value in (None, "") else float(value)


def find_bin_dir(given: str | None = None) -> Path:
    """``bin_dir`` if given (made absolute), else ``pg_config --bindir``, else the newest
    ``/usr/lib/postgresql/*/bin``."""
    if given:
        if not all((Path(given) / name).exists() for name in _SERVER_BINARIES):
            raise UserError(f"no PostgreSQL server binaries ({', '.join(_SERVER_BINARIES)}) in {given}")
        return Path(os.path.abspath(given))  # not resolved: another name for an installation stays its own
    return _discovered_bin_dir()


@lru_cache(maxsize=1)
def _discovered_bin_dir() -> Path:
    """Asked once per process: every path of a managed cluster (its data directory is named by the version)
    comes through here, and ``pg_config`` is a process of its own."""
    candidates = []
    if shutil.which("pg_config"):
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(found.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for candidate in candidates:
        if candidate and all((Path(candidate) / name).exists() for name in _SERVER_BINARIES):
            return Path(candidate)
    raise UserError(f"no PostgreSQL server binaries ({', '.join(_SERVER_BINARIES)}) found through pg_config or "
                    "in /usr/lib/postgresql/*/bin: install postgresql or pass --bin-dir")


@dataclass(frozen=True)
class BinDirValue:
    """The ``bin_dir`` knob: a directory with a PostgreSQL installation's server binaries."""

    def parse(self, raw: str) -> str:
        try:
            return str(find_bin_dir(raw.strip()))
        except UserError as error:
            raise ValueError(str(error)) from None

    def describe(self) -> str:
        return "a directory with initdb, pg_ctl and postgres"


def _version_key(path: str) -> float:
    match = re.search(r"/(\d+(?:\.\d+)?)/bin", path)
    return float(match.group(1)) if match else 0.0


def placeholders(sql: str) -> str:
    """The workload's ``?`` placeholders in psycopg's ``%s`` form."""
    return sql.replace("%", "%%").replace("?", "%s")


class PostgresAsyncSession(AsyncSession):
    """A psycopg 3 async connection in autocommit mode: each statement is its own transaction."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self._translated: dict[str, str] = {}

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        translated = self._translated.get(sql) or self._translated.setdefault(sql, placeholders(sql))
        await self.connection.execute(translated, params)

    async def close(self) -> None:
        await self.connection.close()


class PostgresSession(Session):
    """A psycopg 3 connection in autocommit mode with explicit BEGIN/COMMIT. Statements with parameters are
    prepared once (``?`` becomes ``$n``) and run through libpq, in pipelines (``batch``)."""

    def __init__(self, connection: Any) -> None:
        from psycopg import pq
        from psycopg.adapt import Transformer

        self.connection = connection
        self._pgconn = connection.pgconn
        self._prepared: dict[str, bytes] = {}
        self._encoding = connection.info.encoding
        self._succeeded = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
        self._snapshot_begin: str | None = None  # how a transaction that needs one snapshot begins
        self._begin: bytes | None = None  # a BEGIN to send with the transaction's first statements
        self._committed = False  # the transaction's last batch committed it
        self._value: bytes | None = None  # the first value of the last split call's result
        self._sync = pq.ExecStatus.PIPELINE_SYNC
        self._transformer = Transformer(connection)  # psycopg's loaders: a result's rows as Python values

    def begin(self, read_only: bool = False, one_snapshot: bool = False) -> None:
        """BEGIN goes with the transaction's first statements, not in a round trip of its own."""
        self._begin = (self._one_snapshot_begin() if one_snapshot else "BEGIN").encode()

    def _one_snapshot_begin(self) -> str:
        """At read committed each statement sees its own snapshot: one that must see one is repeatable read
        (in PostgreSQL one snapshot for the whole transaction). A stricter default stays as it is."""
        if self._snapshot_begin is None:
            (default,) = self.connection.execute("SHOW default_transaction_isolation").fetchone()
            self._snapshot_begin = _SNAPSHOT_BEGIN if default in _PER_STATEMENT_SNAPSHOTS else "BEGIN"
        return self._snapshot_begin

    def commit(self) -> None:
        self._end(b"COMMIT")

    def rollback(self) -> None:
        self._end(b"ROLLBACK")

    def _end(self, command: bytes) -> None:
        """COMMIT or ROLLBACK, unless the transaction never reached the server (nothing was sent since BEGIN) or
        its last batch committed it."""
        if self._begin is not None or self._committed:
            self._begin, self._committed = None, False
            return
        result = self._pgconn.exec_(command)
        if result.status not in self._succeeded:
            raise self._error(result)

    def _run(self, sql: str, params: Sequence[Any]) -> Any:
        """Statements without parameters (several may run at once: DDL, the functions' script) through psycopg,
        after a BEGIN still to be sent."""
        if self._begin is not None:
            self.connection.execute(self._begin.decode())
            self._begin = None
        return self.connection.execute(sql)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        if not params:
            return self._run(sql, params).rowcount
        return self._pipelined([(sql, params)])[0].command_tuples or 0

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        rows = self.fetchall(sql, params)
        return rows[0] if rows else None

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        if not params:
            return self._run(sql, params).fetchall()
        return self._rows(self._pipelined([(sql, params)])[0])

    def batch(self, statements: Sequence[tuple[str, Sequence[Any]]], last: bool = False) -> list[list[tuple]]:
        """One pipeline: every statement prepared once and sent with its parameters as text
        (``_text_parameters``), the results read as they come back, one round trip in all, the transaction's
        BEGIN before them and, for its ``last`` batch, its COMMIT after them. Through psycopg's cursor a
        statement cost about 100 µs of client CPU; this way about 10 (bench/README.md)."""
        return [self._rows(result) for result in self._pipelined(statements, last)]

    def _pipelined(self, statements: Sequence[tuple[str, Sequence[Any]]], last: bool = False) -> list[Any]:
        """The statements' results, sent in one pipeline after a BEGIN still to be sent, and before COMMIT for the
        ``last``; the first failure raised (what follows it in the pipeline is not run)."""
        pgconn, text = self._pgconn, _c_text_parameters or _text_parameters
        names = [self._prepared.get(sql) or self._prepare(sql) for sql, _ in statements]  # not in pipeline mode
        begin, self._begin = self._begin, None
        pgconn.enter_pipeline_mode()
        try:
            if begin is not None:
                pgconn.send_query_params(begin, None)
            for name, (_, params) in zip(names, statements):
                pgconn.send_query_prepared(name, text(params))
            if last:
                pgconn.send_query_params(b"COMMIT", None)
            pgconn.pipeline_sync()
            self._flush()
            results = [self._result() for _ in range((begin is not None) + len(statements) + last)]
            self._result()  # the sync's
        finally:
            import psycopg

            with contextlib.suppress(psycopg.Error):  # a pipeline cut short (a lost connection) has results left
                pgconn.exit_pipeline_mode()
        failed = next((result for result in results if result.status not in self._succeeded), None)
        if failed is not None:
            raise self._error(failed)
        self._committed = last
        return results[begin is not None:len(results) - last]

    def _flush(self) -> None:
        while self._pgconn.flush():  # nonblocking: a full socket buffer keeps the rest
            select.select([], [self._pgconn.socket], [])

    def _result(self) -> Any:
        """The next result of the pipeline, waiting for it; and the NULL that ends a statement's results."""
        pgconn = self._pgconn
        while pgconn.is_busy():
            select.select([pgconn.socket], [], [])
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:  # the connection broke: libpq has no result to give
            import psycopg

            raise psycopg.OperationalError(pgconn.error_message.decode(self._encoding, "replace").strip()
                                           or "the connection to the server was lost")
        if result.status != self._sync:
            pgconn.get_result()
        return result

    def _rows(self, result: Any) -> list[tuple]:
        self._transformer.set_pgresult(result)
        return self._transformer.load_rows(0, result.ntuples, tuple)

    def call(self, sql: str, params: Sequence[Any]) -> bytes | None:
        """A prepared statement executed through libpq with text parameters (``_text_parameters``); the
        first value of its result in PostgreSQL's text form.

        psycopg's cursor costs about 100 µs of client CPU per call (parameter adaptation, above all of
        int arrays, and result handling); this path costs about 15 µs, which is what lets one Python
        terminal keep up with a C client (bench/postgres_tpcc.py).
        """
        result = self._pgconn.exec_prepared(self._prepared.get(sql) or self._prepare(sql), params)
        if result.status not in self._succeeded:
            raise self._error(result)
        return result.get_value(0, 0) if result.ntuples else None

    def send_call(self, sql: str, params: Sequence[Any]) -> None:
        name = self._prepared.get(sql) or self._prepare(sql)  # the first call of a statement waits for it
        self._pgconn.send_query_prepared(name, params)
        while self._pgconn.flush():  # nonblocking: a full socket buffer keeps the rest (a few hundred bytes: rare)
            select.select([], [self._pgconn.socket], [])

    def call_finished(self) -> bool:
        pgconn = self._pgconn
        pgconn.consume_input()
        if pgconn.is_busy():
            return False
        result = pgconn.get_result()
        while pgconn.get_result() is not None:  # libpq ends every query's results with a NULL
            pass
        if result.status not in self._succeeded:
            raise self._error(result)
        self._value = result.get_value(0, 0) if result.ntuples else None
        return True

    def call_value(self) -> bytes | None:
        return self._value

    def fileno(self) -> int:
        return self._pgconn.socket

    @property
    def encoding(self) -> str:
        return self._encoding

    def broken(self) -> bool:
        from psycopg import pq

        return self._pgconn.status == pq.ConnStatus.BAD

    def cancel(self) -> None:
        import psycopg

        with contextlib.suppress(psycopg.Error):  # closed in its thread meanwhile: nothing left to stop
            self.connection.cancel_safe(timeout=5)

    def pump_handle(self) -> tuple[int, dict[str, bytes], Any]:
        """What the libpq pump needs to send this session's calls: the PGconn's address, the prepared
        statements' names by SQL text, and what prepares one."""
        return self._pgconn.pgconn_ptr, self._prepared, self._prepare

    def _prepare(self, sql: str) -> bytes:
        name = f"maximus_{len(self._prepared)}".encode()
        numbered = iter(range(1, sql.count("?") + 1))
        result = self._pgconn.prepare(name, re.sub(r"\?", lambda _: f"${next(numbered)}", sql).encode())
        if result.status not in self._succeeded:
            raise self._error(result)
        self._prepared[sql] = name
        return name

    def _error(self, result: Any) -> Exception:
        from psycopg.errors import error_from_result

        return error_from_result(result, encoding=self._encoding)

    def close(self) -> None:
        self.connection.close()


def array_of_ints(text: bytes | None) -> list[int | None]:
    """A one-dimensional integer array in PostgreSQL's text form (``{3001,NULL,3002}``), as a list."""
    if not text:
        return []
    return [None if item == b"NULL" else int(item) for item in text.strip(b"{}").split(b",") if item]


def _text_parameters(params: Sequence[Any]) -> list[bytes | None]:
    """The parameters in PostgreSQL's text input form: NULL, a number, a string, or an array literal
    (written out in one loop: a terminal converts a few thousand a second)."""
    text: list[bytes | None] = []
    for value in params:
        if value is None:
            text.append(None)
        elif value.__class__ is tuple or value.__class__ is list:
            text.append(("{%s}" % ",".join(map(str, value))).encode())
        else:
            text.append(str(value).encode())
    return text


try:  # the same conversion in C, a few times cheaper (_libpq_pump.c); the function above is its reference
    from maximus.engines._libpq_pump import text_parameters as _c_text_parameters
except ImportError:  # built without a C compiler
    _c_text_parameters = None


# The libpq functions _libpq_pump.c calls, in the order of its table.
_PUMP_FUNCTIONS = ("PQsendQueryPrepared", "PQconsumeInput", "PQisBusy", "PQgetResult", "PQresultStatus",
                   "PQresultErrorField", "PQresultErrorMessage", "PQclear", "PQerrorMessage", "PQsocket", "PQflush",
                   "PQntuples", "PQgetisnull", "PQgetvalue", "PQgetlength")


def libpq_functions() -> tuple[int, ...] | None:
    """The addresses of ``_PUMP_FUNCTIONS`` in the libpq psycopg loaded (its own copy for psycopg-binary,
    the system's otherwise): the one library mapped in this process whose name starts with ``libpq``.
    None when there is not exactly one (then a PGconn could not be matched to its library)."""
    import ctypes

    import psycopg.pq  # noqa: F401  (loads libpq)

    try:
        with open("/proc/self/maps") as maps:
            paths = {fields[5] for fields in map(str.split, maps)
                     if len(fields) >= 6 and os.path.basename(fields[5]).startswith("libpq")}
    except OSError:  # not Linux
        return None
    if len(paths) != 1:
        return None
    library = ctypes.CDLL(paths.pop())  # already loaded: the same handle, no second copy
    return tuple(ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in _PUMP_FUNCTIONS)


class LibpqPump:
    """The C pump, with its failures made the exceptions psycopg raises for them (class by SQLSTATE)."""

    def __init__(self, pump: Any) -> None:
        self._pump = pump
        self._encodings: list[str] = []  # by slot
        self.end_all, self.in_flight, self.queue_on, self.progress, self.values = \
            pump.end_all, pump.in_flight, pump.queue_on, pump.progress, pump.values

    def add(self, session: Session) -> int:
        self._encodings.append(session.encoding)
        return self._pump.add(*session.pump_handle())

    def give(self, slot: int, calls: list, start: int, end: float, resend: bool = False) -> list[Event]:
        return self._with_errors(self._pump.give(slot, calls, start, end, resend))

    def wait(self, timeout_s: float) -> list[Event]:
        return self._with_errors(self._pump.wait(timeout_s))

    def _with_errors(self, events: list[Event]) -> list[Event]:
        for n, (slot, kind, index, times, error) in enumerate(events):
            if kind == FAILED and isinstance(error, tuple):
                events[n] = (slot, kind, index, times, libpq_error(*error, self._encodings[slot]))
        return events


def libpq_error(sqlstate: bytes | None, message: bytes, encoding: str) -> Exception:
    """The exception ``psycopg.errors.error_from_result`` makes of a failed result, from its SQLSTATE and
    message; without a SQLSTATE, the connection failed."""
    from psycopg import errors
    from psycopg.pq import DiagnosticField
    from psycopg.pq.misc import strip_severity

    text = strip_severity(message.decode(encoding, "replace"))
    if sqlstate is None:
        return errors.OperationalError(text or "the connection to the server was lost")
    state = sqlstate.decode()
    try:
        kind = errors.lookup(state)
    except KeyError:  # by the SQLSTATE's class, as psycopg does
        kind = errors.get_base_exception(state)
    return kind(text, info={DiagnosticField.SQLSTATE: sqlstate})


_SUN_PATH_MAX = 107  # sockaddr_un.sun_path holds 108 bytes, the last a NUL


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


def _socket_directory(cluster_dir: Path, port: int) -> Path | None:
    """Where a managed server's Unix-domain socket goes: its cluster's directory, made absolute (libpq takes
    a relative path for a host name), which every client of the run then connects to instead of TCP
    loopback (README, PostgreSQL: the machine spends less CPU per transaction). None when the socket's path
    would not fit in ``sun_path`` or PostgreSQL's list syntax would split or trim it: then clients use TCP."""
    directory = cluster_dir.absolute()
    text = str(directory)
    if len(os.fsencode(directory / f".s.PGSQL.{port}")) > _SUN_PATH_MAX or text != text.strip() \
            or "," in text or '"' in text:
        return None
    return directory


class PostgresEngine(Engine):
    """Connection settings: ``dsn`` (external mode), ``bin_dir`` (managed mode), ``allow_changes``
    (external mode: set the knobs with ALTER SYSTEM and reload; off unless the user says so) and
    ``allow_restart`` (external mode: also restart a server on this machine for knobs that need it)."""

    name = "postgres"
    connection_options = ("dsn", "bin_dir", "allow_changes", "allow_restart")
    capabilities = Capabilities(single_writer=False, managed_server=True, server_side_procedures=True,
                                async_sessions=True, split_calls=True)
    dialect = Dialect("postgres", for_update=" FOR UPDATE", primary_keys_after_load=True,
                      call_parameters=_c_text_parameters or _text_parameters, utc_now=UTC_NOW,
                      array_of_ints=array_of_ints)

    def __init__(self, workdir: Path, database: str, settings: Mapping[str, object] | None = None,
                 connection: Mapping[str, str] | None = None) -> None:
        super().__init__(workdir, database, settings, connection)
        if self.external and "port" in self.settings:
            raise UserError("port is not a knob of a server given by --dsn: Maximus connects to the port the DSN "
                            "names, and your server would move away from it at its restart")
        self.port: int | None = None
        self.socket_dir: Path | None = None  # managed mode: where the server's Unix-domain socket is, if anywhere
        self._server_settings: dict[str, str] | None = None  # pg_settings as the started server reported them
        self._altered: dict[str, str | None] = {}  # external mode: what ALTER SYSTEM had set before our knobs
        self._server_version: str | None = None  # as the started server reported it
        self._log_start = 0  # managed mode: where this start's part of server.log begins

    # -- knobs ---------------------------------------------------------------------------------------

    @classmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        """The server's settings; in managed mode also ``bin_dir``, which installation runs the server."""
        rows = _settings_rows(connection.get("dsn", ""), connection.get("bin_dir", ""))
        knobs = [_knob(row) for row in rows if row["context"] != "internal"]
        if not connection.get("dsn"):
            knobs.append(Knob(BIN_DIR, BinDirValue(), str(find_bin_dir(connection.get("bin_dir"))), Applies.RESTART,
                              "The PostgreSQL installation whose initdb, pg_ctl and postgres run the managed server"))
        return KnobCatalogue("postgres", knobs)

    @classmethod
    def catalogue_for(cls, settings: Mapping[str, object], connection: Mapping[str, str]) -> KnobCatalogue:
        """With a ``bin_dir`` knob, the settings of that installation's version validate the other knobs."""
        given = settings.get(BIN_DIR)
        if given is None:
            return cls.catalogue(connection)
        if connection.get("dsn"):
            raise UserError("bin_dir chooses the binaries of a managed server: a server given by --dsn is yours")
        try:
            return cls.catalogue({**connection, BIN_DIR: str(find_bin_dir(str(given).strip()))})
        except UserError as error:
            raise UserError(f"bad value {given!r} for knob {BIN_DIR}: {error}") from None

    @classmethod
    def documented_knobs(cls) -> list[str]:
        return [*sorted(_DURABILITY), BIN_DIR]

    def validate_run(self, terminals: int) -> None:
        """Every terminal and deferred worker holds a connection: a managed server gets enough of them."""
        needed = terminals + 20  # deferred workers, samplers, admin sessions
        if not self.external and "max_connections" not in self.settings and needed > 100:
            self.settings["max_connections"] = str(needed)

    # -- where things live ---------------------------------------------------------------------------

    @property
    def external(self) -> bool:
        return bool(self.connection.get("dsn"))

    @property
    def bin_dir(self) -> Path:
        return find_bin_dir(self.settings.get(BIN_DIR) or self.connection.get(BIN_DIR))

    @property
    def cluster_dir(self) -> Path:
        return self.workdir / f"postgres-{_major(self.bin_dir)}"

    def lock_target(self) -> tuple[Path, str] | None:
        """Every database of a managed cluster shares its one server: the cluster is locked as a whole (beside
        it, so that the lock is taken before initdb makes it). A server of the user's is not Maximus's."""
        if self.external:
            return None
        return self.workdir / f"{self.cluster_dir.name}.lock", f"the PostgreSQL cluster {self.cluster_dir}"

    @property
    def data_dir(self) -> Path:
        return self.cluster_dir / "data"

    @property
    def pristine(self) -> str:
        return f"{self.database}_pristine"

    @property
    def effective_settings(self) -> dict[str, str]:
        """Once the server is up, what it reports in pg_settings, with the run's knobs as the user spelled
        them: a server of the user's runs with its own configuration, not PostgreSQL's defaults. Before,
        the defaults, the run's knobs and the timing settings a managed server gets for monitoring."""
        if self._server_settings is not None:
            chosen = {} if self.external else {BIN_DIR: str(self.bin_dir)}
            return {**self._server_settings, **chosen, **self.settings}
        return {**super().effective_settings, **self._monitoring_settings()}

    def _monitoring_settings(self) -> dict[str, str]:
        """Managed mode: the sampler's timing settings that the run's knobs leave unset (and this version has)."""
        if self.external:
            return {}
        return {name: value for name, value in _MONITORING_SETTINGS.items()
                if name not in self.settings and name in self.knobs}

    def samplers(self) -> list[Sampler]:
        """The server's statistics views, its sessions' wait events and (managed mode) its processes."""
        pid_file = None if self.external else self.data_dir / "postmaster.pid"
        return [PostgresSampler(lambda: self._dsn("postgres"), self.database, pid_file,
                                tuple(self._monitoring_settings()))]

    def data_path(self) -> Path:
        return self.workdir if self.external else self.data_dir

    # -- server lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._server_settings = None
        if self.external:
            self._apply_external_knobs()
        else:
            self._start_managed()
        try:
            self._server_settings = self._read_server_settings()
        except BaseException:
            self.stop()  # started but unreadable: no running() block will stop it
            raise

    def _read_server_settings(self) -> dict[str, str]:
        """Every knob's value as pg_settings gives it, in the largest unit that divides it, as the catalogue's
        defaults are (shared_buffers' 16384 pages are ``128MB``); and the server's version."""
        with self._admin() as admin:
            rows = dict(admin.execute("SELECT name, setting FROM pg_settings").fetchall())
        self._server_version = _plain_version(rows["server_version"])
        return {name: _written(self.knobs.get(name), setting) for name, setting in rows.items() if name in self.knobs}

    def _start_managed(self) -> None:
        self._initdb()
        self.stop_leftover()
        self._await_dead_postmaster()
        self.port = int(self._server_knobs().get("port") or _process.free_port())  # -k port=N: the user's choice
        users_sockets = "unix_socket_directories" in self.settings  # a knob of the user's: connect over TCP
        self.socket_dir = None if users_sockets else _socket_directory(self.cluster_dir, self.port)
        self._write_config()
        log = self.server_log
        self._log_start = _size(log)  # the log accumulates over runs: what this start says begins here
        try:
            _process.run(_process.as_server_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l",
                                                  str(log), "-w", "-t", "120", "start"]), "starting PostgreSQL")
        except EngineError:
            raise EngineError(f"PostgreSQL would not start: {_first_error(log, self._log_start)} (log: {log})") \
                from None

    def stop(self) -> None:
        if self.external:
            self._restore_external_knobs()
            return
        pid = self._postmaster_pid()
        if pid is None or not _process.alive(pid):  # not started, or already gone (killed, crashed): nothing to
            return  # stop; its stale postmaster.pid stays, for the next start's own check of its shared memory
        _process.run(_process.as_server_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast",
                                              "-w", "-t", "120", "stop"]), "stopping PostgreSQL")

    def watch(self) -> Callable[[], str | None]:
        """A managed server's postmaster, alive until the end (a server of the user's tells through its sessions'
        errors, ``fault``)."""
        pid = None if self.external else self._postmaster_pid()
        if pid is None:
            return lambda: None
        return lambda: None if _process.alive(pid) else self._stopped(pid)

    def _stopped(self, pid: int) -> str:
        why = self._log_says(_STOPPED) or f"its postmaster, process {pid}, ended without a word in {self.server_log}" \
            " (killed?)"
        return f"the PostgreSQL server stopped during the run: {why}"

    def _log_says(self, marks: Sequence[str]) -> str | None:
        """The first line of this start's part of a managed server's log with one of ``marks``."""
        lines = [] if self.external else log_since(self.server_log, self._log_start)
        return next((_message(line) for line in lines if any(mark in line for mark in marks)), None)

    def fault(self, error: str) -> str | None:
        first_line = error.strip().splitlines()[0] if error.strip() else error
        if any(mark in error for mark in _FULL):
            return f"the disk holding {self.data_path()} is full ({first_line})"
        if any(mark in error for mark in _CORRUPT):
            return f"the PostgreSQL database {self.database} is corrupt ({first_line})"
        if not any(mark in error for mark in _LOST):
            return None
        pid = None if self.external else self._postmaster_pid()
        if pid is not None and (not _process.alive(pid) or self._log_says(_STOPPED)):  # gone, or on its way
            return self._stopped(pid)
        crash = self._log_says(_CRASHED)
        if crash:
            return f"the PostgreSQL server ended every session to recover from a crash during the run: {crash}"
        return f"the connection to the PostgreSQL server was lost during the run ({first_line})"

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

    def _await_dead_postmaster(self) -> None:
        """A postmaster that was killed (a run's fault) is a zombie until init reaps it, and until then the next
        server takes the pid in postmaster.pid for a live server and will not start: give init a moment."""
        pid = self._postmaster_pid()
        if pid is not None:
            _process.await_reaped(pid)

    def _postmaster_pid(self) -> int | None:
        """The pid in our data directory's ``postmaster.pid``; None without one."""
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    @property
    def server_log(self) -> Path:
        return self.cluster_dir / "server.log"

    def stop_leftover(self) -> None:
        """A server of ours left running by a Maximus that was killed: stop it (by its pid, ours only)."""
        pid = self._postmaster_pid()
        if pid is None:
            return
        if _process.alive(pid) and str(self.data_dir) in _process.command_line(pid):
            _log.info("stopping the PostgreSQL server %d that a Maximus which did not finish left running in %s",
                      pid, self.data_dir)
            self.stop()

    def _initdb(self) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            return
        created = not self.cluster_dir.exists()
        self.cluster_dir.mkdir(parents=True, exist_ok=True)
        try:
            _process.give_to_server_user(self.cluster_dir)
        except UserError:  # a work directory the server user cannot reach: leave nothing of ours in it
            if created:
                self.cluster_dir.rmdir()
            raise
        _process.run(_process.as_server_user([str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U",
                                              "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"]),
                     "initdb", timeout=300)
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write("\ninclude_if_exists = 'maximus.conf'\n")

    def _write_config(self) -> None:
        sockets = {"unix_socket_directories": str(self.socket_dir or "")}
        lines = [f"port = {self.port}", "listen_addresses = '127.0.0.1'"]
        lines += [f"{name} = {_conf_quoted(value)}"
                  for name, value in {**sockets, **self._monitoring_settings(), **self._server_knobs()}.items()]
        path = self.data_dir / "maximus.conf"
        path.write_text("# written by Maximus for this run\n" + "\n".join(lines) + "\n")
        _process.give_to_server_user(path)

    def _server_knobs(self) -> dict[str, str]:
        """The run's knobs that are the server's settings: not ``bin_dir``, which chooses the server."""
        return {name: value for name, value in self.settings.items() if name != BIN_DIR}

    def _apply_external_knobs(self) -> None:
        if not self.settings:
            return
        restart = self._needing_restart(self.settings)
        if self.connection.get("allow_changes") != "yes":
            needed = ("--allow-restart (ALTER SYSTEM + restart)" if restart
                      else "--allow-changes (ALTER SYSTEM + reload)")
            raise UserError(f"knobs on a server you own change only with {needed}")
        if restart and self.connection.get("allow_restart") != "yes":
            raise UserError(f"{', '.join(restart)} {'takes' if len(restart) == 1 else 'take'} effect only after a "
                            "restart: allow Maximus to restart "
                            "your server with --allow-restart (a server on this machine, started with pg_ctl)")
        server = LocalServer.of(self._admin) if restart else None
        if not self._altered:  # a second start() before stop(): what was there before is already kept
            with self._admin() as admin:
                self._altered = _auto_conf_entries(admin, list(self.settings))
        try:
            self._alter(self.settings, server, ", ".join(f"{name}={self.settings[name]}" for name in restart),
                        "the configuration it had before")
        except EngineError:  # only the restart raises it, after putting the file back as it was
            self._altered = {}
            raise

    def _restore_external_knobs(self) -> None:
        """Put back what ``ALTER SYSTEM`` said before the run (a value of the user's own, or nothing), so a
        knob of one run does not stay on the user's server for the next one, or after Maximus; restarted
        again when a knob needed it."""
        if not self._altered:
            return
        restart = self._needing_restart(self._altered)
        server = LocalServer.of(self._admin) if restart else None
        altered, self._altered = self._altered, {}
        put_back = ", ".join(f"{name} reset" if altered[name] is None else f"{name}={altered[name]}"
                             for name in restart)
        self._alter(altered, server, f"the configuration put back ({put_back})",
                    f"the run's {', '.join(f'{name}={self.settings[name]}' for name in restart)}, which stays in "
                    "postgresql.auto.conf until you ALTER SYSTEM SET or RESET it")

    def _alter(self, values: Mapping[str, str | None], server: LocalServer | None, because: str,
               fallback: str) -> None:
        """``ALTER SYSTEM`` and reload; then, for knobs that need it, restart ``server``, which runs with
        ``fallback`` (the file as it was before) if it will not restart."""
        before = server.auto_conf.read_text() if server else ""
        changed = ", ".join(f"RESET {name}" if value is None else f"SET {name}={value}"
                            for name, value in values.items())
        _log.info("your PostgreSQL server: ALTER SYSTEM %s, then %s", changed,
                  f"a restart (fast shutdown) of {server.data_dir}" if server else "a reload")
        with self._admin() as admin:
            _alter_system(admin, values)
        if server:
            server.restart(because, before, fallback)

    def _needing_restart(self, names: Iterable[str]) -> list[str]:
        return [name for name in names if self.knobs.get(name).applies is Applies.RESTART]

    # -- databases -----------------------------------------------------------------------------------

    def _dsn(self, database: str) -> str:
        if self.external:
            return _with_database(self.connection["dsn"], database)
        if self.port is None:
            raise EngineError("the PostgreSQL server is not running: start() it first")
        from psycopg.conninfo import make_conninfo

        host = str(self.socket_dir) if self.socket_dir else "127.0.0.1"
        return make_conninfo(host=host, port=self.port, user="postgres", dbname=database)

    def _admin(self) -> Any:
        import psycopg

        return psycopg.connect(self._dsn("postgres"), autocommit=True)

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
        cursor = session.connection.cursor()
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
        cursor = session.connection.cursor()
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            copy.write(text)

    def call_pump(self) -> Pump:
        """The C pump over the libpq psycopg loaded (``_libpq_pump.c``); the Python one when the extension
        was not compiled or that libpq cannot be told from another one in the process."""
        try:
            from maximus.engines._libpq_pump import Pump as CPump
        except ImportError:
            return PythonPump()
        addresses = libpq_functions()
        return PythonPump() if addresses is None else LibpqPump(CPump(addresses))

    def classify(self, error: BaseException) -> Outcome:
        return Outcome.RETRY if getattr(error, "sqlstate", None) in _RETRYABLE_STATES else Outcome.FAILED

    def isolation(self, one_snapshot: bool, procedure: bool) -> str:
        """The server's default level (``default_transaction_isolation``), or repeatable read for a client-side
        transaction that must see one snapshot where the default gives each statement its own."""
        default = self.effective_settings.get("default_transaction_isolation", "read committed")
        return "repeatable read" if one_snapshot and not procedure and default in _PER_STATEMENT_SNAPSHOTS \
            else default

    def version(self) -> str:
        """The installation's version; a server of the user's is asked (it has been started)."""
        if self.external:
            return self._server_version or "external"
        return _full_version(self.bin_dir)

    def reported_settings(self, session: Session) -> dict[str, str]:
        """The settings a DBA looks at first and the run's knobs, as ``SHOW`` spells them (``2GB``)."""
        names = list(dict.fromkeys([*_REPORTED, *self._server_knobs()]))
        found = dict(session.fetchall("SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(?)",
                                      (names,)))
        return {name: found[name] for name in names if name in found}


@dataclass(frozen=True)
class LocalServer:
    """A server of the user's on this machine, as pg_ctl restarts it: its data directory, its pg_ctl, its
    owner, and the file its output goes to."""

    data_dir: Path
    pg_ctl: Path
    owner: str
    log: str

    @classmethod
    def of(cls, connect: Callable[[], Any]) -> LocalServer:
        """The server behind ``connect``, or a one-line refusal when Maximus cannot restart it."""
        with connect() as admin:
            data_dir, port = admin.execute("SELECT current_setting('data_directory'), "
                                           "current_setting('port')").fetchone()
        data_dir = Path(data_dir)
        try:
            lines = (data_dir / "postmaster.pid").read_text().splitlines()
            pid, pid_port = int(lines[0]), lines[3].strip()  # the file's first and fourth lines
        except (OSError, ValueError, IndexError):
            pid, pid_port = 0, ""
        if pid_port != port or not _process.alive(pid):  # a directory of that name here is not the server
            raise UserError(f"cannot restart the server: its data directory {data_dir} is not on this machine "
                            "(or not readable)")
        unit = _system_service(pid)
        if unit:
            raise UserError(f"cannot restart the server: the system service {unit} runs it; restart it yourself "
                            "with the knobs set, or use managed mode")
        try:
            pg_ctl = Path(os.readlink(f"/proc/{pid}/exe")).parent / "pg_ctl"
        except OSError:
            pg_ctl = find_bin_dir() / "pg_ctl"
        output = Path(f"/proc/{pid}/fd/2")
        log = os.readlink(output) if output.is_file() else os.devnull  # where its messages went, kept there
        log = os.devnull if log.endswith(" (deleted)") else log
        return cls(data_dir, pg_ctl, pwd.getpwuid(data_dir.stat().st_uid).pw_name, log)

    @property
    def auto_conf(self) -> Path:
        return self.data_dir / "postgresql.auto.conf"

    def restart(self, because: str, auto_conf_before: str, fallback: str) -> None:
        """``pg_ctl restart`` with the server's own command line. One that fails puts the ALTER SYSTEM file
        back as it was before (``auto_conf_before``, which gives the server ``fallback``) and starts the
        server again: a knob the server refuses does not leave the user's server down."""
        offset = _size(self.log)
        try:
            self._pg_ctl("restart")
        except EngineError:
            reason = _first_error(self.log, offset)
            self.auto_conf.write_text(auto_conf_before)
            try:
                self._pg_ctl("start")
            except EngineError as error:
                raise EngineError(f"PostgreSQL would not restart with {because} ({reason}), nor start again with "
                                  f"the configuration it had before: {error}") from None
            raise EngineError(f"PostgreSQL would not restart with {because} ({reason}): it runs again with "
                              f"{fallback}") from None

    def _pg_ctl(self, action: str) -> None:
        command = [str(self.pg_ctl), "-D", str(self.data_dir), "-l", self.log, "-m", "fast", "-w", "-t", "120",
                   action]
        if _process.running_as_root() and self.owner != "root":
            command = ["runuser", "-u", self.owner, "--", *command]
        _process.run(command, f"{action} of PostgreSQL", timeout=300)


def _system_service(pid: int) -> str:
    try:
        return system_service_in(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return ""


def system_service_in(cgroup: str) -> str:
    """The system service a process runs under (``postgresql@15-main.service``) by its ``/proc/PID/cgroup``,
    or '' for one started from a login session (under user.slice) or on a machine without systemd."""
    found = re.search(r"/system\.slice/(?:[^/\n]+\.slice/)*([^/\n]+\.service)", cgroup)
    return found.group(1) if found else ""


def _auto_conf_entries(admin: Any, names: Sequence[str]) -> dict[str, str | None]:
    """Each name's line in ``postgresql.auto.conf`` (what ALTER SYSTEM set), or None where it has none."""
    rows = admin.execute("SELECT name, setting FROM pg_file_settings WHERE name = ANY(%s) "
                         "AND sourcefile LIKE '%%/postgresql.auto.conf' ORDER BY seqno", (list(names),)).fetchall()
    return {name: None for name in names} | dict(rows)


def _quoted(value: str) -> str:
    """A value as a single-quoted SQL string, which ALTER SYSTEM takes (and writes out in its own file)."""
    return "'" + value.replace("'", "''") + "'"


def _conf_quoted(value: str) -> str:
    """A value as a single-quoted string of postgresql.conf, where a backslash starts an escape (``\\n``)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


def _alter_system(admin: Any, values: Mapping[str, str | None]) -> None:
    """``ALTER SYSTEM`` SET each value, RESET each None, then reload."""
    for name, value in values.items():
        if value is None:
            admin.execute(f"ALTER SYSTEM RESET {name}")
        else:
            admin.execute(f"ALTER SYSTEM SET {name} = {_quoted(value)}")
    admin.execute("SELECT pg_reload_conf()")


def _major(bin_dir: Path) -> str:
    return _full_version(bin_dir).split(".")[0]


def _with_database(dsn: str, database: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, dbname=database)


def _size(path: Path | str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def log_since(log: Path | str, offset: int) -> list[str]:
    """The lines a server wrote to ``log`` from ``offset`` on: what one start said, not the runs' before it."""
    try:
        with open(log, "rb") as file:
            file.seek(offset)
            return file.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def _message(line: str) -> str:
    """``could not ...`` of ``2026-11-25 01:52:34.604 UTC [10615] PANIC:  could not ...``."""
    return line.split(":  ", 1)[-1].strip()


def _first_error(log: Path | str, offset: int) -> str:
    """Why a start failed, from that start's part of the log: its first FATAL or PANIC line, else its last line
    (a setting the postmaster refuses before its logging starts is written without a level)."""
    lines = [line for line in log_since(log, offset) if line.strip()]
    severe = [line for line in lines if "FATAL:  " in line or "PANIC:  " in line]
    if severe:
        return _message(severe[0])
    return _message(lines[-1]).removeprefix("postgres: ") if lines else "the server log says nothing"


@lru_cache(maxsize=8)
def _settings_rows(dsn: str, bin_dir: str) -> tuple[dict, ...]:
    """pg_settings of the server the knobs are for: the user's server, or (cached on disk per version)
    a throwaway cluster of the managed binaries."""
    if dsn:
        return _query_settings(dsn)
    binaries = find_bin_dir(bin_dir or None)
    cache = _cache_dir() / f"pg_settings-{_full_version(binaries)}.json"
    if cache.exists():
        return tuple(json.loads(cache.read_text()))
    rows = _settings_from_throwaway_cluster(binaries)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(list(rows)))
    return rows


def _cache_dir() -> Path:
    """$XDG_CACHE_HOME/maximus, by default ~/.cache/maximus."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "maximus"


@lru_cache(maxsize=8)
def _full_version(bin_dir: Path) -> str:
    """The server binaries' version, asked once per directory (the data directory's name depends on it):
    ``postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`` gives ``15.18``."""
    found = _process.run([str(bin_dir / "postgres"), "--version"], "postgres --version")
    match = re.search(r"\(PostgreSQL\) (\S+)", found)
    return match.group(1) if match else found.strip().split()[-1]


def _plain_version(reported: str) -> str:
    """``15.18`` of the server's ``15.18 (Debian 15.18-0+deb12u1)``."""
    return reported.split()[0] if reported.strip() else reported


def _written(knob: Knob, setting: str) -> str:
    return knob.type.spelled_exactly(setting) if isinstance(knob.type, PgValue) else setting


def _query_settings(dsn: str) -> tuple[dict, ...]:
    import psycopg
    from psycopg.rows import dict_row

    try:
        with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as connection:
            rows = connection.execute("SELECT name, vartype, unit, min_val, max_val, enumvals, boot_val, context,"
                                      " short_desc FROM pg_settings").fetchall()
    except psycopg.OperationalError as error:
        raise EngineError(f"cannot connect to PostgreSQL: {str(error).strip().splitlines()[-1]}") from None
    return tuple({**row, "enumvals": list(row["enumvals"] or [])} for row in rows)


def _settings_from_throwaway_cluster(bin_dir: Path) -> tuple[dict, ...]:
    with tempfile.TemporaryDirectory(prefix="maximus-pg-catalogue-", dir="/tmp") as scratch:
        Path(scratch).chmod(0o755)  # our own scratch directory: the server user must traverse it
        engine = PostgresEngine.__new__(PostgresEngine)
        engine.workdir, engine.database, engine.connection = Path(scratch), "postgres", {"bin_dir": str(bin_dir)}
        engine.settings, engine.port = {}, None
        engine.knobs = KnobCatalogue("postgres", [])  # the catalogue is what this cluster is started to read
        engine.start()
        try:
            return _query_settings(engine._dsn("postgres"))
        finally:
            engine.stop()
