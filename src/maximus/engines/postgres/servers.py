"""How the PostgreSQL engine reaches its server, on top of the shared server layer (``engines/server/``):
``ManagedServer`` (``managed.py``) is a throwaway cluster Maximus runs in the work directory; ``ExternalServer``
(``external.py``) is a server the user owns, named by a DSN. Both are reached by a connection string, and both write
the log lines read here."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from maximus.engines.server import ServerControl, ServerErrors


ERRORS = ServerErrors(
    # psycopg's classes for SQLSTATE class 57 (operator intervention) and libpq's words for a connection that broke
    lost=("AdminShutdown", "CrashShutdown", "CannotConnectNow", "server closed the connection",
          "connection is lost", "connection is closed", "the connection to the server was lost",
          "consuming input failed", "terminating connection", "SSL SYSCALL error",
          "could not receive data from server", "no connection to the server"),
    full=("DiskFull", "No space left on device"),
    corrupt=("DataCorrupted", "IndexCorrupted"),
    # how a server's log says that it ended every session to recover from a crash
    crashed=("was terminated by signal", "terminating any other active server processes"),
    # no wait: the log says "shutdown request" or "PANIC" before the sessions are ended
)


class PostgresServer(ServerControl):
    """A PostgreSQL server, reached by a libpq connection string."""

    errors = ERRORS
    title = "PostgreSQL"

    @abstractmethod
    def dsn(self, database: str) -> str:
        """The connection string of ``database`` on the server."""

    def admin(self) -> Any:
        """An autocommit session on the maintenance database."""
        import psycopg

        return psycopg.connect(self.dsn("postgres"), autocommit=True)


def message(line: str) -> str:
    """``could not ...`` of ``2026-11-25 01:52:34.604 UTC [10615] PANIC:  could not ...``; a line the postmaster
    writes before its logging starts has no level, and may begin with the program's name."""
    return line.split(":  ", 1)[-1].strip().removeprefix("postgres: ")


def is_error(line: str) -> bool:
    """A FATAL or PANIC line: what stopped the server, or kept it from starting."""
    return "FATAL:  " in line or "PANIC:  " in line
