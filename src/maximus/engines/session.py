"""The Session contract: one connection of one terminal, as the driver and the workloads use it.

Engines implement it (``Engine.connect``); pumps (``engines/pump.py``) drive several sessions' split calls
from one process. It lives apart from ``engines/base.py`` so that the pumps, which the Engine contract
offers, need not import the Engine contract.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Sequence


class Session(ABC):
    """One connection used by one terminal: SQL with ``?`` placeholders, explicit transactions."""

    @abstractmethod
    def begin(self, read_only: bool = False, one_snapshot: bool = False) -> None:
        """Start a transaction. ``one_snapshot``: every read of it must see the same committed state (a
        read-only transaction that reads several tables, TPC-C's Order-Status, 3.4.0.1); an engine whose
        default level gives each statement its own snapshot raises the level for this transaction."""

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None: ...

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed."""

    @abstractmethod
    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple | None: ...

    @abstractmethod
    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...

    def batch(self, statements: Sequence[tuple[str, Sequence[Any]]], last: bool = False) -> list[list[tuple]]:
        """Run statements that do not wait for each other's results, in order, in the caller's transaction;
        return each one's rows (RETURNING's, for a change). A server engine sends them at once (PostgreSQL:
        one pipeline, one round trip), so a client-side transaction costs a round trip per batch, not per
        statement. The first error is raised once all have been sent; those after it did nothing.

        ``last``: the transaction's last statements. An engine may send its COMMIT with them, when all of them
        succeed; the ``commit()`` that follows then has nothing left to do."""
        return [self.fetchall(sql, params) for sql, params in statements]

    def call(self, sql: str, params: Sequence[Any]) -> Any:
        """Run one statement many times over (a stored-function call); return the first value of its
        first row, or None, in whatever form the engine's path gives it (``dialect.array_of_ints``
        reads an array of it).

        ``params`` come converted by the engine's ``dialect.call_parameters``. Engines with a cheaper
        path for a repeated statement (prepared once, parameters as text) override this; the driver's
        client cost per transaction is mostly spent here.
        """
        row = self.fetchone(sql, params)
        return None if row is None else row[0]

    # Engines with ``capabilities.split_calls`` also split ``call`` in two, so that one process can keep
    # calls in flight on several sessions and wait for whichever answers first (driver.multiplexed).

    def send_call(self, sql: str, params: Sequence[Any]) -> None:
        """Send what ``call`` sends and return at once; ``call_finished`` then collects the result."""
        raise NotImplementedError

    def call_finished(self) -> bool:
        """Read what has arrived without waiting: True once the call's result is complete, raising the
        call's error as ``call`` would; False while it is still running."""
        raise NotImplementedError

    def call_value(self) -> Any:
        """After ``call_finished`` said True: what ``call`` would have returned for that call."""
        raise NotImplementedError

    def fileno(self) -> int:
        """The socket that becomes readable when the server answers."""
        raise NotImplementedError

    def broken(self) -> bool:
        """Whether the connection is lost (the server or the network dropped it): nothing more can run."""
        return False

    def library_handle(self) -> tuple[str, int] | None:
        """This connection as its engine's client library knows it, for code in C that runs statements on it (in
        the caller's transaction, as ``execute`` would): the start of the library's file name, by which the
        functions to call are found (``engines.pump.library_functions``), and the handle's address. SQLite's is
        ``("libsqlite3", its sqlite3 *)``, PostgreSQL's ``("libpq", its PGconn *)``, MariaDB's ``("libmariadb", its
        MYSQL *)``. None where the driver does not give it."""
        return None

    def library_value(self, type_code: int, text: bytes) -> Any:
        """A value the client library gave as text, of a type C code that ran statements on ``library_handle`` does
        not read itself (PostgreSQL's NUMERIC, TIMESTAMP: by its type's OID; MariaDB's DECIMAL, DATETIME: by its field
        type), as this session's driver reads it."""
        raise NotImplementedError

    def library_error(self, reported: tuple) -> Exception:
        """The exception this session's driver raises for a failure of a statement that C code ran on
        ``library_handle``, from what the library reported of it (libpq: its SQLSTATE, or None, and its message;
        libmariadb: its error number, SQLSTATE and message)."""
        raise NotImplementedError

    def cancel(self) -> None:
        """From another thread: stop the statement this session is running, which then raises in its own
        thread. Best effort, and nothing on an engine that cannot (an embedded one)."""

    @abstractmethod
    def close(self) -> None: ...


class BatchedSession(Session):
    """A session that sends a transaction's BEGIN with its first statements, and its COMMIT with its last batch
    where the caller says which is last: a round trip fewer at each end. ``_begin`` is the BEGIN still to be sent,
    ``_committed`` that the last batch committed."""

    _begin: bytes | None = None
    _committed: bool = False

    def commit(self) -> None:
        self._end(b"COMMIT")

    def rollback(self) -> None:
        self._end(b"ROLLBACK")

    def take_begin(self) -> bytes | None:
        """The BEGIN still to be sent, for C code that sends it with its first statements on ``library_handle``
        (and its COMMIT with its last: ``committed_with_batch``); the session no longer sends it."""
        begin, self._begin = self._begin, None
        return begin

    def give_back_begin(self, begin: bytes | None) -> None:
        """C code that took the BEGIN (``take_begin``) failed before it sent anything: the transaction never reached
        the server, and ``rollback`` has nothing to send."""
        self._begin = begin

    def committed_with_batch(self) -> None:
        """C code on ``library_handle`` sent the transaction's COMMIT with its last statements: ``commit`` has
        nothing left to do."""
        self._committed = True

    def _end(self, command: bytes) -> None:
        """COMMIT or ROLLBACK, unless the transaction never reached the server (nothing was sent since BEGIN) or
        its last batch committed it."""
        if self._begin is not None or self._committed:
            self._begin, self._committed = None, False
            return
        self._send_end(command)

    @abstractmethod
    def _send_end(self, command: bytes) -> None:
        """Send COMMIT or ROLLBACK on its own."""


class AsyncSession(ABC):
    """One connection of an asynchronous terminal: single statements in autocommit mode."""

    @abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...
