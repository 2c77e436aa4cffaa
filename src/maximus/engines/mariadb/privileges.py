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
# ER_PROCACCESS_DENIED_ERROR, ER_BINLOG_CREATE_ROUTINE_NEED_SUPER (a function created with the binary log on)
DENIED = {1044, 1142, 1143, 1227, 1370, 1419}
# The privilege a statement needs, by its first words, where the server's message does not name it (1044 names the
# database only). LOAD DATA LOCAL needs INSERT only (FILE is for the server's own files).
_NEEDS = (("DROP", "DROP"), ("CREATE", "CREATE"), ("ALTER", "ALTER"), ("INSERT", "INSERT"), ("LOAD", "INSERT"),
          ("RENAME", "ALTER and DROP on the old name, CREATE and INSERT on the new"), ("SELECT", "SELECT"))
# How the server names the privilege in its message: 1227, 1419, and 1142/1370's "INDEX command denied"
_NAMED = re.compile(r"you need \(at least one of\) the (.+?) privilege|You do not have the (\w+) privilege|"
                    r"^(\w+(?: routine)?) command denied", re.IGNORECASE)
# What a build and a run do in Maximus's database, each once on a table and a function of the probe's own: the first
# statement the user may not run is refused before the build begins, where the loader's would end it midway.
_PROBE = ("CREATE TABLE `{db}`.maximus_probe (a INT PRIMARY KEY, b INT)",
          "INSERT INTO `{db}`.maximus_probe VALUES (1, 1)",
          "UPDATE `{db}`.maximus_probe SET b = 2 WHERE a = 1",
          "SELECT b FROM `{db}`.maximus_probe",
          "DELETE FROM `{db}`.maximus_probe",
          "CREATE INDEX maximus_probe_b ON `{db}`.maximus_probe (b)",
          "ALTER TABLE `{db}`.maximus_probe DROP INDEX maximus_probe_b",
          "CREATE FUNCTION `{db}`.maximus_probe() RETURNS INT DETERMINISTIC RETURN 1",
          "SELECT `{db}`.maximus_probe()",
          "DROP FUNCTION `{db}`.maximus_probe",
          "DROP TABLE `{db}`.maximus_probe")


def is_denied(error: BaseException) -> bool:
    """Whether ``error`` (a MySQLdb error) is the server refusing a statement for a privilege the user lacks."""
    return bool(getattr(error, "args", None)) and error.args[0] in DENIED


def privilege(statement: str, message: str) -> str:
    """The privilege the refused ``statement`` needed: as the server's ``message`` names it, else by the statement's
    verb (1044 names the database only)."""
    named = _NAMED.search(message)
    if named:
        return next(group for group in named.groups() if group).upper()
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


def probe(admin: AdminConnection) -> None:
    """Every kind of statement a build and a run send, run once in the new, empty database of ``admin``: one the user
    may not run is a ``UserError`` naming its privilege (``on_database``), before anything is loaded."""
    for statement in _PROBE:
        admin.query(statement.format(db=admin.database).encode())
        admin.store_result()


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
