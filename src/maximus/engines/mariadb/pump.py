"""The bridge to the C pump over libmariadb (``engines/_mariadb_pump.c``): the addresses of the libmariadb functions
it calls, and its failures made the exceptions MySQLdb raises for them."""

from __future__ import annotations

import os
from typing import Any

from MySQLdb import _mysql

from maximus.engines.mariadb.sessions import MariaDBSession
from maximus.engines.pump import FAILED, Event, Pump, PythonPump

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
    """The addresses of ``_PUMP_FUNCTIONS`` in the libmariadb MySQLdb loaded: the one library mapped in this
    process whose name starts with ``libmariadb`` (or ``libmysqlclient``). None when there is not exactly one."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {fields[5] for fields in map(str.split, maps)
                     if len(fields) >= 6 and os.path.basename(fields[5]).startswith(("libmariadb", "libmysqlclient"))}
    except OSError:  # not Linux
        return None
    if len(paths) != 1:
        return None
    library = ctypes.CDLL(paths.pop())  # already loaded: the same handle, no second copy
    try:
        return tuple(ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in _PUMP_FUNCTIONS)
    except AttributeError:  # a client library without one of them
        return None


class MariaDBPump:
    """The C pump, with its failures made the exceptions MySQLdb raises for them, noted by their sessions."""

    def __init__(self, pump: Any) -> None:
        self._pump = pump
        self._sessions: list[MariaDBSession] = []  # by slot
        self.end_all, self.in_flight, self.queue_on, self.progress, self.values = \
            pump.end_all, pump.in_flight, pump.queue_on, pump.progress, pump.values

    def add(self, session: MariaDBSession) -> int:
        slot = self._pump.add(*session.pump_handle())
        self._sessions.append(session)
        return slot

    def give(self, slot: int, calls: list, start: int, end: float, resend: bool = False) -> list[Event]:
        return self._with_errors(self._pump.give(slot, calls, start, end, resend))

    def wait(self, timeout_s: float) -> list[Event]:
        return self._with_errors(self._pump.wait(timeout_s))

    def _with_errors(self, events: list[Event]) -> list[Event]:
        for n, (slot, kind, index, times, error) in enumerate(events):
            if kind == FAILED and isinstance(error, tuple):
                error = mysql_error(*error)
                self._sessions[slot].failed(error)
                events[n] = (slot, kind, index, times, error)
        return events


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
        from maximus.engines._mariadb_pump import Pump as CPump
    except ImportError:
        return PythonPump()
    addresses = libmariadb_functions()
    return PythonPump() if addresses is None else MariaDBPump(CPump(addresses))
