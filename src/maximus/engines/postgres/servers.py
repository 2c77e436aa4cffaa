"""How the PostgreSQL engine reaches its server, on top of the shared server layer (``engines/server/``):
``ManagedServer`` (``managed.py``) is a throwaway cluster Maximus runs in the work directory; ``ExternalServer``
(``external.py``) is a server the user owns, named by a DSN. Both are reached by a connection string, and both write
the log lines read here."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from maximus.engines.server import ServerControl


class PostgresServer(ServerControl):
    """A PostgreSQL server, reached by a libpq connection string."""

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
