"""PostgreSQL sessions: psycopg connections, their statements prepared once and run through libpq with
their parameters as text (``text_parameters``), in pipelines."""

from __future__ import annotations

import contextlib
import re
import select
from typing import Any, Sequence

from maximus.engines.session import AsyncSession, BatchedSession

UTC_NOW = "(now() AT TIME ZONE 'UTC')"  # the transaction's start, to the microsecond, as TIMESTAMP columns hold it
PER_STATEMENT_SNAPSHOTS = {"read committed", "read uncommitted"}
_SNAPSHOT_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ"


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


class PostgresSession(BatchedSession):
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
        self._loaders: dict[int, Any] = {}  # by type OID: library_value's

    def begin(self, read_only: bool = False, one_snapshot: bool = False) -> None:
        """BEGIN goes with the transaction's first statements, not in a round trip of its own."""
        self._begin = (self._one_snapshot_begin() if one_snapshot else "BEGIN").encode()

    def _one_snapshot_begin(self) -> str:
        """At read committed each statement sees its own snapshot: one that must see one is repeatable read
        (in PostgreSQL one snapshot for the whole transaction). A stricter default stays as it is."""
        if self._snapshot_begin is None:
            (default,) = self.connection.execute("SHOW default_transaction_isolation").fetchone()
            self._snapshot_begin = _SNAPSHOT_BEGIN if default in PER_STATEMENT_SNAPSHOTS else "BEGIN"
        return self._snapshot_begin

    def _send_end(self, command: bytes) -> None:
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
        BEGIN before them and, for its ``last`` batch, its COMMIT after them. Through psycopg's cursor each
        statement costs several times the client CPU (bench/README.md)."""
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

        psycopg's cursor costs several times the client CPU per call (parameter adaptation, above all of
        int arrays, and result handling); this path is what lets one Python terminal keep up with a C
        client (bench/postgres_tpcc.py, bench/README.md).
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

    def library_handle(self) -> tuple[str, int] | None:
        """The PGconn * in the libpq psycopg loaded, for the C profiles (``workloads/tpcc/native.py``), which read
        text as UTF-8: None for a connection in another encoding, or closed (its PGconn freed)."""
        address = self._pgconn.pgconn_ptr
        return ("libpq", address) if address is not None and self._encoding == "utf-8" else None

    def library_value(self, type_code: int, text: bytes) -> Any:
        """A value of a result's column in text form, as psycopg's loader of its type reads it (``_rows``)."""
        loader = self._loaders.get(type_code)
        if loader is None:
            from psycopg import pq

            adapters = self.connection.adapters  # a type without a loader of its own: text, as psycopg reads it
            kind = adapters.get_loader(type_code, pq.Format.TEXT) or adapters.get_loader(0, pq.Format.TEXT)
            loader = self._loaders[type_code] = kind(type_code, self.connection).load
        return loader(text)

    def library_error(self, reported: tuple) -> Exception:
        """What psycopg raises for a failed result, from its SQLSTATE (None: the connection failed) and message."""
        from maximus.engines.postgres.pump import libpq_error

        sqlstate, message = reported
        return libpq_error(sqlstate, message, self._encoding)

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


def array_of_ints(text: bytes | list[int | None] | None) -> list[int | None]:
    """A one-dimensional integer array in PostgreSQL's text form (``{3001,NULL,3002}``, as ``Session.call`` gives
    it), as a list; one that psycopg read (a row's, ``Transaction.screen``) is a list already."""
    if isinstance(text, list):
        return text
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

