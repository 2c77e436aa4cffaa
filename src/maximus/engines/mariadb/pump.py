"""The bridge to the C pump over libmariadb (``engines/_mariadb_pump.c``): the addresses of the libmariadb functions
it calls, and its failures made the exceptions MySQLdb raises for them."""

from __future__ import annotations

from MySQLdb import _mysql

from maximus.engines.mariadb.sessions import MariaDBSession
from maximus.engines.pump import CPump, Pump, PythonPump, library_functions

# The libmariadb functions _mariadb_pump.c calls, in the order of its table.
_PUMP_FUNCTIONS = ("mysql_send_query", "mysql_read_query_result", "mysql_store_result", "mysql_fetch_row",
                   "mysql_fetch_lengths", "mysql_free_result", "mysql_next_result", "mysql_errno", "mysql_error",
                   "mysql_sqlstate", "mysql_get_socket", "mysql_field_count")

# MySQLdb's classes for the error numbers it singles out (its _mysql.c); any other is an OperationalError, or an
# InternalError below 1000.
_PROGRAMMING = {2014, 1007, 1149, 1064, 1146, 1102, 1103, 1110, 1111, 1112, 1113, 1179}
_DATA = {1230, 1264, 1265, 1171, 1406, 1441}
_INTEGRITY = {1062, 1169, 1216, 1217, 1451, 1452, 1215, 1364, 1048}
_NOT_SUPPORTED = {1196, 1235, 1286, 1289}


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


def mysql_error(code: int, sqlstate: bytes, message: bytes) -> Exception:
    """The exception MySQLdb raises for a failed call, ``(code, message)``, with its SQLSTATE."""
    kind = (_mysql.InterfaceError if code == 0 else _mysql.ProgrammingError if code in _PROGRAMMING
            else _mysql.DataError if code in _DATA else _mysql.IntegrityError if code in _INTEGRITY
            else _mysql.NotSupportedError if code in _NOT_SUPPORTED
            else _mysql.InternalError if code < 1000 else _mysql.OperationalError)
    error = kind(code, message.decode("utf-8", "replace"))
    error.sqlstate = sqlstate.decode("ascii", "replace")
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
