"""The bridge to the C pump over libmariadb (``engines/_mariadb_pump.c``): the addresses of the libmariadb functions
it calls, and its failures made the exceptions MySQLdb raises for them (``errors.mysql_error``)."""

from __future__ import annotations

from maximus.engines.mariadb.errors import mysql_error
from maximus.engines.mariadb.sessions import MariaDBSession
from maximus.engines.pump import CPump, Pump, PythonPump, library_functions

# The libmariadb functions _mariadb_pump.c calls, in the order of its table.
_PUMP_FUNCTIONS = ("mysql_send_query", "mysql_read_query_result", "mysql_store_result", "mysql_fetch_row",
                   "mysql_fetch_lengths", "mysql_free_result", "mysql_next_result", "mysql_errno", "mysql_error",
                   "mysql_sqlstate", "mysql_get_socket", "mysql_field_count")


def libmariadb_functions() -> tuple[int, ...] | None:
    """The addresses of ``_PUMP_FUNCTIONS`` in the libmariadb (or libmysqlclient) MySQLdb loaded; None when it
    cannot be told from another such library in the process."""
    return library_functions(("libmariadb", "libmysqlclient"), _PUMP_FUNCTIONS)


class MariaDBPump(CPump):
    """The C pump over libmariadb, its failures the exceptions MySQLdb raises for them, noted by their sessions
    (a lost connection)."""

    def error(self, session: MariaDBSession, reported: tuple) -> Exception:
        error = mysql_error(*reported)
        session.failed(error)
        return error


def call_pump() -> Pump:
    """The C pump over the libmariadb MySQLdb loaded (``_mariadb_pump.c``); the Python one when the extension was
    not compiled or that library cannot be told from another one in the process."""
    try:
        from maximus.engines._mariadb_pump import Pump as Native
    except ImportError:
        return PythonPump()
    addresses = libmariadb_functions()
    return PythonPump() if addresses is None else MariaDBPump(Native(addresses))
