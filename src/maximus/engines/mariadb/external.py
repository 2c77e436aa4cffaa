"""A server the user owns, named by a DSN (``mysql://user:password@host:port/database``).

Maximus connects to it as it is and records its variables. Its knobs change only with the user's leave
(``allow_changes``): each with ``SET GLOBAL``, put back to the value it had after the run. A variable that only a
restart changes is refused: Maximus does not restart a server it does not own.
"""

from __future__ import annotations

import logging
from contextlib import closing
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit

from maximus.engines import server
from maximus.engines.mariadb.servers import MariaDBServer, connect, query_variables
from maximus.engines.mariadb.settings import LOG_BIN, PAGE_SIZE, catalogue_of, set_global
from maximus.engines.mariadb.changes import Abandoned, ChangesJournal
from maximus.engines.mariadb.privileges import is_denied, on_variable
from maximus.errors import EngineError, MaximusError, UserError
from maximus.knobs import KnobCatalogue

_log = logging.getLogger(__name__)  # what a user should know happened to their server (the CLI prints it)
_SCHEMES = ("mysql", "mariadb")


def dsn_arguments(dsn: str) -> dict[str, Any]:
    """MySQLdb.connect's arguments from ``mysql://user:password@host:port/database`` (the database is not used:
    Maximus creates its own, named by the build)."""
    parts = urlsplit(dsn.strip())
    shown = _without_password(dsn.strip())
    if parts.scheme not in _SCHEMES or not parts.hostname:
        raise UserError(f"bad MariaDB --dsn {shown!r}: expected mysql://user:password@host:port/database")
    port = _port(parts.netloc, shown)
    # the client library takes "localhost" for its default Unix socket and ignores the port: another server
    host = "127.0.0.1" if parts.hostname == "localhost" else parts.hostname
    arguments: dict[str, Any] = {"host": host, "port": port, "user": unquote(parts.username or "root")}
    if parts.password is not None:
        arguments["password"] = unquote(parts.password)
    return arguments


def _port(netloc: str, shown: str) -> int:
    """The DSN's port (3306 when it names none): a TCP port, 1 to 65535. Read from the text, as urlsplit says "out of
    range" and "not a number" alike with one ValueError, and takes a port of 0 for none."""
    text = netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    if not text:
        return 3306
    if not text.isascii() or not text.isdigit():
        raise UserError(f"bad MariaDB --dsn {shown!r}: the port {text!r} is not a number")
    if not 1 <= int(text) <= 65535:
        raise UserError(f"bad MariaDB --dsn {shown!r}: the port {int(text)} is out of range: a TCP port is 1 to 65535")
    return int(text)


def _without_password(dsn: str) -> str:
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    return dsn.replace(f":{parts.password}@", ":***@", 1)


@lru_cache(maxsize=8)
def server_variables(dsn: str) -> tuple[dict, ...]:
    return query_variables(dsn_arguments(dsn))


class ExternalServer(MariaDBServer, server.ExternalServer):
    """The user's server at ``connection["dsn"]``: SET GLOBAL with ``allow_changes``, never a restart."""

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        super().__init__(workdir, database, settings, knobs, connection)
        fixed = [name for name in (PAGE_SIZE, LOG_BIN) if name in settings]
        if fixed:
            raise UserError(f"{', '.join(fixed)} is fixed by your server (given by --dsn): Maximus neither creates nor "
                            "restarts it")

    @classmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        return catalogue_of(server_variables(connection["dsn"]))

    def connect_arguments(self) -> dict[str, Any]:
        return dsn_arguments(self.connection["dsn"])

    def refuse_without_leave(self) -> None:
        if not self.allows_changes:
            raise UserError("knobs on a server you own change only with --allow-changes (SET GLOBAL, put back after "
                            "the run)")
        restart = self.needing_restart(self.settings)
        if restart:
            raise UserError(f"{', '.join(restart)} {'changes' if len(restart) == 1 else 'change'} only when your "
                            "server restarts: set it in your server's configuration (Maximus does not restart a server "
                            "it does not own), or use managed mode")

    @property
    def journal(self) -> ChangesJournal:
        arguments = self.connect_arguments()
        return ChangesJournal(arguments["host"], arguments["port"])

    def start(self) -> None:
        """What a Maximus that was killed left changed on this server is put back first: the values before this run
        are read after it, and this run measures the server as the user has it."""
        for left in self.journal.abandoned():
            self._put_back_abandoned(left)
        super().start()

    def _put_back_abandoned(self, left: Abandoned) -> None:
        with closing(connect(self.connect_arguments())) as connection:
            failed = self._put_back(connection, left.before)
        left.path.unlink(missing_ok=True)  # put back, or the user is told how: once
        if failed:
            raise EngineError(f"your MariaDB server still has variables that a Maximus that was killed (process "
                              f"{left.pid}) set, and they could not be put back: run {'; '.join(failed)}")
        _log.info("your MariaDB server: put back %s, left changed by a Maximus that was killed (process %d)",
                  ", ".join(f"{name}={value}" for name, value in left.before.items()), left.pid)

    def values_before(self, names: list[str]) -> dict[str, str | None]:
        """Each variable's global value."""
        with closing(connect(self.connect_arguments())) as connection:
            return {name: _global(connection, name) for name in names}

    def change(self, values: Mapping[str, str]) -> None:
        """SET GLOBAL each value; on a refusal, or a Ctrl-C among the SETs, what was set is put back: only that, as a
        variable the server refused to set is as the user had it."""
        _log.info("your MariaDB server: SET GLOBAL %s (put back after the run)",
                  ", ".join(f"{name}={value}" for name, value in values.items()))
        changed: list[str] = []
        with closing(connect(self.connect_arguments())) as connection:
            self.journal.write(self.kept)  # before the first change: a Maximus killed after it leaves what to put back
            try:
                for name, value in values.items():
                    _set_global(connection, {name: value}, self.knobs)
                    changed.append(name)
            except BaseException as error:
                kept, self.kept = self.kept, {}
                left = self._put_back(connection, {name: kept[name] for name in changed if name in kept})
                self.journal.forget()
                if not isinstance(error, Exception):
                    raise
                raise self._refused(name, value, error, left) from None

    def _refused(self, name: str, value: str, error: Exception, left: list[str]) -> MaximusError:
        """Why ``SET GLOBAL name = value`` failed, in one line: a privilege the user lacks (``UserError``), or the
        server's refusal; with the statements that put back what could not be."""
        statement = set_global(name, value, self.knobs)
        refused: MaximusError = on_variable(name, statement, error) if is_denied(error) else \
            EngineError(f"MariaDB refused {name}={value}: {error.args[-1] if error.args else error}")
        if left:
            refused = EngineError(f"{refused}; and {_not_put_back(left)}")
        return refused

    def put_back(self, before: Mapping[str, str | None]) -> None:
        with closing(connect(self.connect_arguments())) as connection:
            left = self._put_back(connection, before)
        self.journal.forget()  # what is left, the error names
        if left:
            raise EngineError(_not_put_back(left))

    def _put_back(self, connection: Any, before: Mapping[str, str | None]) -> list[str]:
        """Every variable on its own, so one refusal leaves none of the others changed; the statements that put
        back what could not be."""
        failed = []
        for name, value in before.items():
            try:
                _set_global(connection, {name: value}, self.knobs)
            except Exception:
                failed.append(set_global(name, value, self.knobs))
        return failed


def _not_put_back(statements: list[str]) -> str:
    return f"could not put your MariaDB server's variables back: run {'; '.join(statements)}"


def _global(connection: Any, name: str) -> str | None:
    connection.query(f"SELECT @@GLOBAL.{name}".encode())
    ((value,),) = connection.store_result().fetch_row(0)
    return None if value is None else value.decode() if isinstance(value, bytes) else str(value)


def _set_global(connection: Any, values: Mapping[str, str | None], knobs: KnobCatalogue) -> None:
    for name, value in values.items():
        connection.query(set_global(name, value, knobs).encode())
