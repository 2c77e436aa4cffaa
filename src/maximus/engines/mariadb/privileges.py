"""What a MariaDB user may not do, as one line naming the privilege it lacks.

On a server of the user's (``--dsn``) Maximus acts as the DSN's user: it creates and drops its databases (``tpcc-1wh``
and its pristine twin), and with ``--allow-changes`` sets variables. A user without the privilege for one of these is
the user's input to change (exit code 2), not a fault of the server: the line names the statement, the privilege and
the grant that gives it.
"""

from __future__ import annotations

import re
from typing import Any

from maximus.errors import UserError

# ER_DBACCESS_DENIED_ERROR, ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR, ER_SPECIFIC_ACCESS_DENIED_ERROR,
# ER_PROCACCESS_DENIED_ERROR
DENIED = {1044, 1142, 1143, 1227, 1370}
# The privilege a statement needs, by its first words, where the server's message does not name it (1044 names the
# database only). LOAD DATA LOCAL needs INSERT only (FILE is for the server's own files).
_NEEDS = (("DROP", "DROP"), ("CREATE", "CREATE"), ("ALTER", "ALTER"), ("INSERT", "INSERT"), ("LOAD", "INSERT"),
          ("RENAME", "ALTER and DROP on the old name, CREATE and INSERT on the new"), ("SELECT", "SELECT"))
_SPECIFIC = re.compile(r"you need \(at least one of\) the (.+?) privilege")


def is_denied(error: BaseException) -> bool:
    """Whether ``error`` (a MySQLdb error) is the server refusing a statement for a privilege the user lacks."""
    return bool(getattr(error, "args", None)) and error.args[0] in DENIED


def privilege(statement: str, message: str) -> str:
    """The privilege the refused ``statement`` needed: as the server names it (1227), else by the statement's verb."""
    named = _SPECIFIC.search(message)
    if named:
        return named.group(1)
    words = statement.split()
    verb = words[0].upper() if words else ""
    return next((needed for first, needed in _NEEDS if verb == first), verb or "a privilege")


def on_database(statement: str, error: BaseException, database: str) -> UserError:
    """A statement on Maximus's database ``database`` (or its twin) that the user may not run."""
    message = str(error.args[-1])
    return UserError(f"your MariaDB user may not {_doing(statement)} (it lacks {privilege(statement, message)}: "
                     f"{message}): give it every privilege on Maximus's databases, GRANT ALL PRIVILEGES ON "
                     f"`{database}%`.* TO the user")


def on_variable(name: str, statement: str, error: BaseException) -> UserError:
    """A ``SET GLOBAL`` the user may not run (``--allow-changes``)."""
    message = str(error.args[-1])
    return UserError(f"your MariaDB user may not set {name} ({statement}: {message}): grant it "
                     f"{privilege(statement, message)}, or run without the knob")


def _doing(statement: str) -> str:
    """``DROP DATABASE IF EXISTS `tpcc-1wh``` as what it does, in a few words: "DROP DATABASE `tpcc-1wh`"."""
    words = [word for word in statement.split() if word.upper() not in ("IF", "EXISTS", "NOT")]
    return "run " + " ".join(words[:3]) + (" ..." if len(words) > 3 else "")


class AdminConnection:
    """A MySQLdb connection for Maximus's own statements on its database, closed at the end of a ``with``; a
    statement refused for a privilege the user lacks is one ``UserError`` line (``on_database``)."""

    def __init__(self, connection: Any, database: str) -> None:
        self.connection, self.database = connection, database

    def query(self, statement: bytes) -> None:
        try:
            self.connection.query(statement)
        except Exception as error:
            if is_denied(error):
                raise on_database(statement.decode(errors="replace"), error, self.database) from None
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connection, name)

    def __enter__(self) -> AdminConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.connection.close()
