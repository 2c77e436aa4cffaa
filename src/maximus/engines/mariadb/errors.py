"""What MySQLdb raises for a failure that C code over its libmariadb reported (the C pump, the C profiles), from the
error number, SQLSTATE and message libmariadb gave."""

from __future__ import annotations

from MySQLdb import _mysql

# MySQLdb's classes for the error numbers it singles out (its _mysql.c); any other is an OperationalError, or an
# InternalError below 1000.
_PROGRAMMING = {2014, 1007, 1149, 1064, 1146, 1102, 1103, 1110, 1111, 1112, 1113, 1179}
_DATA = {1230, 1264, 1265, 1171, 1406, 1441}
_INTEGRITY = {1062, 1169, 1216, 1217, 1451, 1452, 1215, 1364, 1048}
_NOT_SUPPORTED = {1196, 1235, 1286, 1289}


def mysql_error(code: int, sqlstate: bytes, message: bytes) -> Exception:
    """The exception MySQLdb raises for a failed call, ``(code, message)``, with its SQLSTATE."""
    kind = (_mysql.InterfaceError if code == 0 else _mysql.ProgrammingError if code in _PROGRAMMING
            else _mysql.DataError if code in _DATA else _mysql.IntegrityError if code in _INTEGRITY
            else _mysql.NotSupportedError if code in _NOT_SUPPORTED
            else _mysql.InternalError if code < 1000 else _mysql.OperationalError)
    error = kind(code, message.decode("utf-8", "replace"))
    error.sqlstate = sqlstate.decode("ascii", "replace")
    return error
