"""How the MariaDB engine reaches its server, on top of the shared server layer (``engines/server/``):
``ManagedServer`` (``managed.py``) is a server Maximus creates and runs in the work directory, one per database;
``ExternalServer`` (``external.py``) is a server the user owns, named by a DSN. Both are reached by MySQLdb's
connection arguments, and both list their variables in ``information_schema.SYSTEM_VARIABLES``."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any, Callable, Mapping

from maximus.engines.server import ServerControl, ServerErrors
from maximus.errors import EngineError, UserError

CONNECT_TIMEOUT_S = 10
ACCESS_DENIED = 1045  # ER_ACCESS_DENIED_ERROR: the login itself refused (a wrong user or password)


ERRORS = ServerErrors(
    lost=("(2006, ", "(2013, ", "(2055, ", "server has gone away", "Lost connection", "Can't connect"),
    full=("(1114, ", "is full", "No space left on device", "errno: 28"),
    corrupt=("(1877, ", "(1034, ", "is corrupt", "Index for table"),
    # EE_CANT_CHSIZE: InnoDB could not extend a file (its system tablespace, say); the errno it shows is garbage,
    # the log has the real one: "preallocating 79691776 bytes for file ./ibdata1 failed with error 28" (ENOSPC)
    unexplained_io=("change size of file",),  # str() of the error writes it with repr's quotes: Can\'t change
    full_in_log=("failed with error 28", "No space left on device", "errno: 28", "Out of disk space"),
    stop_seen_within_s=1.0,  # a killed server's sockets close before its process is seen gone
)


class MariaDBServer(ServerControl):
    """A MariaDB server, reached by MySQLdb's connection arguments."""

    errors = ERRORS
    title = "MariaDB"

    @abstractmethod
    def connect_arguments(self) -> dict[str, Any]:
        """MySQLdb.connect's arguments for the server (without a database)."""

    def remove_data(self) -> bool:
        """Where Maximus owns the server (whose data is one database of Maximus's alone): the server stopped and its
        data directory removed, its log kept; whether it was."""
        return False

    def pristine_files(self) -> tuple[Path, Path, Callable[[Path], None]] | None:
        """Where the server keeps its data and Maximus may keep a database's pristine copy as files (the data
        directory, the copy's directory, and what gives a file to the server's user); None where Maximus cannot
        reach the server's files, and keeps the copy in the server."""
        return None


def message(line: str) -> str:
    """``Unknown option ...`` of ``2026-11-27  3:02:38 0 [ERROR] Unknown option ...``."""
    return line.split("] ", 1)[-1].strip()


def is_error(line: str) -> bool:
    """An ``[ERROR]`` line, but for the ``Aborting`` that follows the one that says why."""
    return "[ERROR]" in line and "Aborting" not in line


def connect(arguments: Mapping[str, Any], database: str | None = None) -> Any:
    """A MySQLdb connection in autocommit mode that sends several statements at once and counts matched rows
    (as PostgreSQL and SQLite count an UPDATE's rows); a failure is one EngineError line."""
    import MySQLdb
    from MySQLdb.constants import CLIENT

    try:
        return MySQLdb.connect(**arguments, **({"database": database} if database else {}), autocommit=True,
                               client_flag=CLIENT.MULTI_STATEMENTS | CLIENT.FOUND_ROWS, local_infile=1,
                               charset="utf8mb4", connect_timeout=CONNECT_TIMEOUT_S)
    except MySQLdb.Error as error:
        if error.args and error.args[0] == ACCESS_DENIED:  # the user and password given: the user's input
            raise UserError(f"MariaDB refused the user and password of --dsn ({error.args[-1]}): check them") \
                from None
        raise EngineError(f"cannot connect to MariaDB: {error.args[-1]}") from None


COLUMNS = {"VARIABLE_NAME", "VARIABLE_SCOPE", "VARIABLE_TYPE", "VARIABLE_COMMENT", "NUMERIC_MIN_VALUE",
           "NUMERIC_MAX_VALUE", "ENUM_VALUE_LIST", "READ_ONLY", "COMMAND_LINE_ARGUMENT", "DEFAULT_VALUE"}


def query_variables(arguments: Mapping[str, Any]) -> tuple[dict, ...]:
    """The server's ``information_schema.SYSTEM_VARIABLES``, in name order."""
    import MySQLdb.cursors

    connection = connect(arguments)
    try:
        cursor = connection.cursor(MySQLdb.cursors.DictCursor)
        cursor.execute(f"SELECT {', '.join(sorted(COLUMNS))} FROM information_schema.SYSTEM_VARIABLES "
                       "ORDER BY VARIABLE_NAME")
        return tuple(dict(row) for row in cursor.fetchall())
    finally:
        connection.close()
