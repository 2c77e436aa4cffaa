"""The bridge to the C pump over libpq (``engines/_libpq_pump.c``): the addresses of the libpq functions it
calls, and its failures made the exceptions psycopg raises for them."""

from __future__ import annotations

import os
from typing import Any

from maximus.engines.session import Session
from maximus.engines.pump import FAILED, Event, Pump, PythonPump

# The libpq functions _libpq_pump.c calls, in the order of its table.
_PUMP_FUNCTIONS = ("PQsendQueryPrepared", "PQconsumeInput", "PQisBusy", "PQgetResult", "PQresultStatus",
                   "PQresultErrorField", "PQresultErrorMessage", "PQclear", "PQerrorMessage", "PQsocket", "PQflush",
                   "PQntuples", "PQgetisnull", "PQgetvalue", "PQgetlength")


def libpq_functions() -> tuple[int, ...] | None:
    """The addresses of ``_PUMP_FUNCTIONS`` in the libpq psycopg loaded (its own copy for psycopg-binary,
    the system's otherwise): the one library mapped in this process whose name starts with ``libpq``.
    None when there is not exactly one (then a PGconn could not be matched to its library)."""
    import ctypes

    import psycopg.pq  # noqa: F401  (loads libpq)

    try:
        with open("/proc/self/maps") as maps:
            paths = {fields[5] for fields in map(str.split, maps)
                     if len(fields) >= 6 and os.path.basename(fields[5]).startswith("libpq")}
    except OSError:  # not Linux
        return None
    if len(paths) != 1:
        return None
    library = ctypes.CDLL(paths.pop())  # already loaded: the same handle, no second copy
    return tuple(ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in _PUMP_FUNCTIONS)


class LibpqPump:
    """The C pump, with its failures made the exceptions psycopg raises for them (class by SQLSTATE)."""

    def __init__(self, pump: Any) -> None:
        self._pump = pump
        self._encodings: list[str] = []  # by slot
        self.end_all, self.in_flight, self.queue_on, self.progress, self.values = \
            pump.end_all, pump.in_flight, pump.queue_on, pump.progress, pump.values

    def add(self, session: Session) -> int:
        self._encodings.append(session.encoding)
        return self._pump.add(*session.pump_handle())

    def give(self, slot: int, calls: list, start: int, end: float, resend: bool = False) -> list[Event]:
        return self._with_errors(self._pump.give(slot, calls, start, end, resend))

    def wait(self, timeout_s: float) -> list[Event]:
        return self._with_errors(self._pump.wait(timeout_s))

    def _with_errors(self, events: list[Event]) -> list[Event]:
        for n, (slot, kind, index, times, error) in enumerate(events):
            if kind == FAILED and isinstance(error, tuple):
                events[n] = (slot, kind, index, times, libpq_error(*error, self._encodings[slot]))
        return events


def libpq_error(sqlstate: bytes | None, message: bytes, encoding: str) -> Exception:
    """The exception ``psycopg.errors.error_from_result`` makes of a failed result, from its SQLSTATE and
    message; without a SQLSTATE, the connection failed."""
    from psycopg import errors
    from psycopg.pq import DiagnosticField
    from psycopg.pq.misc import strip_severity

    text = strip_severity(message.decode(encoding, "replace"))
    if sqlstate is None:
        return errors.OperationalError(text or "the connection to the server was lost")
    state = sqlstate.decode()
    try:
        kind = errors.lookup(state)
    except KeyError:  # by the SQLSTATE's class, as psycopg does
        kind = errors.get_base_exception(state)
    return kind(text, info={DiagnosticField.SQLSTATE: sqlstate})



def call_pump() -> Pump:
    """The C pump over the libpq psycopg loaded (``_libpq_pump.c``); the Python one when the extension
    was not compiled or that libpq cannot be told from another one in the process."""
    try:
        from maximus.engines._libpq_pump import Pump as CPump
    except ImportError:
        return PythonPump()
    addresses = libpq_functions()
    return PythonPump() if addresses is None else LibpqPump(CPump(addresses))
