"""How the MariaDB engine gets at its server: one interface, two strategies chosen once when the engine is built.
``ManagedServer`` (``managed.py``) is a server Maximus creates and runs in the work directory; ``ExternalServer``
(``external.py``) is a server the user owns, named by a DSN, whose variables Maximus changes only when allowed
to, and puts back after the run."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

from maximus.errors import EngineError
from maximus.knobs import KnobCatalogue

CONNECT_TIMEOUT_S = 10


class ServerControl(ABC):
    """Starting, stopping and reaching one MariaDB server with the run's knobs."""

    manages: ClassVar[bool]  # Maximus starts and stops the server itself

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        self.workdir, self.database, self.settings, self.knobs, self.connection = \
            workdir, database, settings, knobs, connection

    @classmethod
    @abstractmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        """The knobs of the server ``connection`` leads to."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None:
        """Undo ``start``; safe to call twice."""

    @abstractmethod
    def connect_arguments(self) -> dict[str, Any]:
        """MySQLdb.connect's arguments for the server (without a database)."""

    @abstractmethod
    def version(self, reported: str | None) -> str: ...

    @abstractmethod
    def data_path(self) -> Path: ...

    def make_room_for(self, connections: int) -> None:
        """Have the server take ``connections`` sessions at once, where Maximus chooses its configuration."""

    def chosen_settings(self) -> dict[str, str]:
        """What Maximus sets on a managed server beside the run's knobs (performance_schema, ...)."""
        return {}

    def lock_target(self) -> tuple[Path, str] | None:
        return None

    def pid(self) -> int | None:
        """The server's process, where it is Maximus's."""
        return None

    def watch(self) -> Callable[[], str | None]:
        return lambda: None

    def stopped(self) -> str | None:
        return None

    # -- the pristine copy ---------------------------------------------------------------------------

    def pristine_files(self) -> tuple[Path, Path, Callable[[Path], None]] | None:
        """Where the server keeps its data and Maximus may keep a database's pristine copy as files (the data
        directory, the copy's directory, and what gives a file to the server's user); None where Maximus cannot
        reach the server's files, and keeps the copy in the server."""
        return None


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
