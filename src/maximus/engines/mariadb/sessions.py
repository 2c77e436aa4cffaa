"""MariaDB sessions: MySQLdb (mysqlclient, in C over libmariadb) connections in autocommit mode, driven through its
low-level calls. A transaction's statements go to the server together, as one multi-statement query: each as the
workload wrote it for MariaDB, the parameters written in as escaped literals by the driver's C code, so a
client-side transaction costs a round trip per batch, not per statement."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Any, Callable, Sequence

from maximus.engines.session import BatchedSession
from maximus.errors import EngineError

UTC_NOW = "UTC_TIMESTAMP(6)"  # the server's UTC time to the microsecond, as DATETIME(6) holds it
# MariaDB has no array type: an array parameter (New-Order's lines) is written as JSON text, which a function's JSON
# parameter takes, and an array a function returns is JSON text too (``array_of_ints``).
JSON_TEXT = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps with separators builds an encoder per call
ARRAYS = (list, tuple)
PER_STATEMENT_SNAPSHOTS = {"READ-COMMITTED", "READ-UNCOMMITTED"}
_LOST = {2006, 2013, 2055}  # server has gone away, lost connection during query, lost connection at ...
# The field types whose converters MySQLdb gives str, not bytes: DECIMAL, NEWDECIMAL, TIMESTAMP, DATETIME, TIME, DATE
_CONVERTED_FROM_STR = {0, 246, 7, 12, 11, 10}
# Standard SQL's "||" concatenates, as in PostgreSQL and SQLite: a workload's SQL may use it (TPC-C's Payment).
# MariaDB's own stored functions are created in this mode too, and keep it. A call's literals are written with
# backslash escapes (sql_literal), which NO_BACKSLASH_ESCAPES would read otherwise: a server's mode that has it
# loses it (its name made a duplicate).
SQL_MODE = ("SET SESSION sql_mode = CONCAT(REPLACE(@@sql_mode, 'NO_BACKSLASH_ESCAPES', 'PIPES_AS_CONCAT'), "
            "',PIPES_AS_CONCAT')")


def array_of_ints(value: Any) -> list[int | None]:
    """A function's JSON array of integers (TPC-C's tpcc_delivery's delivered orders), as a list."""
    if value is None:
        return []
    return list(json.loads(value)) if isinstance(value, (str, bytes)) else list(value)


class MariaDBSession(BatchedSession):
    """One MySQLdb connection in autocommit mode; BEGIN (START TRANSACTION) goes with a transaction's first
    statements, COMMIT with its last batch, in the same query."""

    def __init__(self, connection: Any, kill: Callable[[int], None]) -> None:
        self.connection = connection
        self._kill = kill  # ends this session's statement from another connection (KILL QUERY)
        self._literal = connection.literal
        # By SQL text: the statement split at its placeholders, as bytes; a query is the pieces with literals between
        self._pieces: dict[str, tuple[bytes, ...]] = {}
        self._begin: bytes | None = None  # a START TRANSACTION still to be sent
        self._committed = False  # the transaction's last batch committed it
        self._snapshot_begin: bytes | None = None
        self._value: Any = None  # the last call's
        self._lost = False
        self._handle: int | None = None  # the MYSQL's address, once asked for (library_handle)
        self.thread_id = connection.thread_id()

    # -- transactions -----------------------------------------------------------------------------

    def begin(self, read_only: bool = False, one_snapshot: bool = False) -> None:
        if one_snapshot:
            self._begin = self._one_snapshot_begin()
        else:
            self._begin = b"START TRANSACTION READ ONLY" if read_only else b"START TRANSACTION"

    def _one_snapshot_begin(self) -> bytes:
        """At read committed each statement reads its own snapshot: a transaction that must see one is repeatable
        read (in InnoDB one read view for the whole transaction). A stricter default stays as it is."""
        if self._snapshot_begin is None:
            level = self._query(b"SELECT @@tx_isolation")[0][0][0][0]
            self._snapshot_begin = (b"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;START TRANSACTION READ ONLY"
                                    if level in PER_STATEMENT_SNAPSHOTS else b"START TRANSACTION READ ONLY")
        return self._snapshot_begin

    def _send_end(self, command: bytes) -> None:
        self._query(command)

    # -- statements -------------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        if not params and self._begin is None and "?" not in sql:
            return sum(changed for _, changed in self._query(sql.encode()))  # DDL, scripts: as they are
        return self._statements([(sql, params)])[0][1]

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple | None:
        rows = self.fetchall(sql, params)
        return rows[0] if rows else None

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self._statements([(sql, params)])[0][0]

    def batch(self, statements: Sequence[tuple[str, Sequence[Any]]], last: bool = False) -> list[list[tuple]]:
        return [rows for rows, _ in self._statements(statements, last)]

    def call(self, sql: str, params: Sequence[bytes]) -> Any:
        """One function call, its parameters SQL literals (``call_parameters``): its first value as the driver
        converts it (a JSON array stays text)."""
        self.send_call(sql, params)
        self.call_finished()
        return self._value

    # -- split calls: busy terminals sharing a process, a call in flight on each (engines/pump.py) -------------

    def send_call(self, sql: str, params: Sequence[bytes]) -> None:
        form = self._pieces.get(sql) or self._split(sql)
        if len(params) != len(form) - 1:
            raise ValueError(f"the statement takes {len(form) - 1} parameters, the call has {len(params)}")
        query = [form[0]]
        for literal, piece in zip(params, form[1:]):
            query += (literal, piece)
        self._send(b"".join(query))

    def call_finished(self) -> bool:
        """Reads the call's result. The pump asks once the socket is readable, and the server sends a call's one
        row at once, so the rest of it, if any, is on its way: libmariadb waits for it (its non-blocking API is
        not in mysqlclient)."""
        rows = self._results()[0][0]
        self._value = rows[0][0] if rows else None
        return True

    def call_value(self) -> Any:
        return self._value

    def fileno(self) -> int:
        return self.connection.fileno()

    def pump_handle(self) -> tuple[int, dict[str, tuple[bytes, ...]], Callable[[str], tuple[bytes, ...]]]:
        """What the C pump needs to send this session's calls (``engines/mariadb/pump.py``): the MYSQL handle's
        address, the calls' statements split at their placeholders by SQL text, and what splits one."""
        return _handle_address(self.connection), self._pieces, self._split

    def _split(self, sql: str) -> tuple[bytes, ...]:
        pieces = tuple(piece.encode() for piece in sql.split("?"))
        self._pieces[sql] = pieces
        return pieces

    def failed(self, error: BaseException) -> None:
        """A call of this session failed outside it (in the C pump, the C profiles): noted as its own failures are."""
        self._explain(error)

    # -- C code running statements on this connection (workloads/tpcc/native.py) -----------------------------

    def library_handle(self) -> tuple[str, int] | None:
        """The MYSQL * in the libmariadb MySQLdb loaded, for the C profiles, which read text as UTF-8: None for a
        connection closed (its handle is no longer one) or in another character set."""
        connection = self.connection
        if not connection.open or not connection.character_set_name().startswith("utf8"):
            return None
        if self._handle is None:  # the MYSQL is part of the connection object: its address is the object's for life
            self._handle = _handle_address(connection)
        return "libmariadb", self._handle

    def library_value(self, type_code: int, text: bytes) -> Any:
        """A column's value, of a type given by its field type, from its text, as MySQLdb's converters make it
        (``_mysql_field_to_python``): a decimal, a date or a time from str, anything else from bytes."""
        convert = self.connection.converter.get(type_code)
        if convert is None or convert is bytes:
            return text
        if convert is str:
            return text.decode()
        return convert(text.decode() if type_code in _CONVERTED_FROM_STR else text)

    def library_error(self, reported: tuple) -> Exception:
        """What MySQLdb raises for a failure the C profiles reported, ``(error number, SQLSTATE, message)``, noted as
        the session's own failures are (a lost connection makes it broken)."""
        from maximus.engines.mariadb.errors import mysql_error

        error = mysql_error(*reported)
        self._explain(error)
        return error

    def _statements(self, statements: Sequence[tuple[str, Sequence[Any]]], last: bool = False
                    ) -> list[tuple[list[tuple], int]]:
        """Every statement's rows and changed-row count, from one query: the pending BEGIN, each statement, and
        COMMIT for the ``last`` batch."""
        queries = [self._written(sql, params) for sql, params in statements]
        begin, self._begin = self._begin, None
        if begin is not None:
            queries.insert(0, begin)
        if last:
            queries.append(b"COMMIT")
        results = self._query(b";".join(queries))
        self._committed = last
        position = len(begin.split(b";")) if begin is not None else 0  # a one-snapshot begin is two statements
        return results[position:position + len(statements)]

    def _written(self, sql: str, params: Sequence[Any]) -> bytes:
        """The statement with its parameters written in as literals (the driver escapes them). An array is JSON
        text, as ``sql_literal`` writes a call's: the driver would write a list as ``(1,2,3)``, which a stored
        function's JSON parameter refuses (a screen's call comes here with its parameters as they are)."""
        pieces = self._pieces.get(sql) or self._split(sql)
        if len(pieces) != len(params) + 1:
            raise ValueError(f"the statement takes {len(pieces) - 1} parameters, not {len(params)}: {sql[:80]}")
        if not params:
            return pieces[0]
        literal = self._literal
        out = [pieces[0]]
        for piece, value in zip(pieces[1:], params):
            out.append(literal(JSON_TEXT(value) if value.__class__ in ARRAYS else value))
            out.append(piece)
        return b"".join(out)

    def _query(self, query: bytes) -> list[tuple[list[tuple], int]]:
        """Send ``query`` (one or several statements); each statement's rows and changed-row count. The first
        error is raised, with its SQLSTATE (``error.sqlstate``); the statements after it did not run."""
        self._send(query)
        return self._results()

    def _send(self, query: bytes) -> None:
        try:
            self.connection.send_query(query)
        except Exception as error:
            self._explain(error)
            raise

    def _results(self) -> list[tuple[list[tuple], int]]:
        connection = self.connection
        results = []
        try:
            connection.read_query_result()
            while True:
                result = connection.store_result()
                results.append((list(result.fetch_row(0)) if result is not None else [], connection.affected_rows()))
                if connection.next_result() != 0:
                    return results
        except Exception as error:
            self._explain(error)
            raise

    def _explain(self, error: BaseException) -> None:
        code = error.args[0] if getattr(error, "args", None) else None
        if code in _LOST:
            self._lost = True
        if getattr(error, "sqlstate", None) is None:
            with contextlib.suppress(Exception):
                error.sqlstate = self.connection.sqlstate()  # type: ignore[attr-defined]

    # -- bulk load --------------------------------------------------------------------------------

    def load_data(self, table: str, columns: Sequence[str], text: bytes) -> None:
        """Rows in PostgreSQL's COPY text form (tab-separated, ``\\N`` for NULL, backslash escapes), which is also
        LOAD DATA's default, through a file the client library reads (LOCAL INFILE), in the caller's transaction."""
        directory = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        with tempfile.NamedTemporaryFile(prefix="maximus-load-", suffix=".tsv", dir=directory) as file:
            file.write(text)
            file.flush()
            path = file.name.replace("\\", "\\\\").replace("'", "\\'")
            begin, self._begin = self._begin, None
            statement = (f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {table} CHARACTER SET utf8mb4 "
                         f"({', '.join(columns)})").encode()
            self._query(b";".join(([begin] if begin else []) + [statement]))
        if self.connection.warning_count():
            # LOCAL turns a row LOAD DATA cannot take (a bad value, a duplicate key) into a warning: a database
            # built from such rows would be measured and kept as if it were right
            warning = self._query(b"SHOW WARNINGS LIMIT 1")[0][0]
            said = f"{warning[0][2]} ({warning[0][1]})" if warning else "warnings"
            raise EngineError(f"loading {table} into MariaDB: {said}")

    # -- the connection ---------------------------------------------------------------------------

    def broken(self) -> bool:
        return self._lost

    def cancel(self) -> None:
        with contextlib.suppress(Exception):  # gone meanwhile: nothing left to stop
            self._kill(self.thread_id)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()


def _handle_address(connection: Any) -> int:
    """The address of the MYSQL handle inside a MySQLdb connection (its ``_get_native_connection`` capsule)."""
    import ctypes

    capsule = connection._get_native_connection()
    get_name, get_pointer = ctypes.pythonapi.PyCapsule_GetName, ctypes.pythonapi.PyCapsule_GetPointer
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))
