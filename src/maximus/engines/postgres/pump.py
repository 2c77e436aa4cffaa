"""The bridge to the C pump over libpq (``engines/_libpq_pump.c``): the addresses of the libpq functions it
calls, and its failures made the exceptions psycopg raises for them."""

from __future__ import annotations

from typing import Any

from maximus.engines.pump import CPump, Pump, PythonPump, library_functions

# The libpq functions _libpq_pump.c calls, in the order of its table.
_PUMP_FUNCTIONS = ("PQsendQueryPrepared", "PQconsumeInput", "PQisBusy", "PQgetResult", "PQresultStatus",
                   "PQresultErrorField", "PQresultErrorMessage", "PQclear", "PQerrorMessage", "PQsocket", "PQflush",
                   "PQntuples", "PQgetisnull", "PQgetvalue", "PQgetlength")


def libpq_functions() -> tuple[int, ...] | None:
    """The addresses of ``_PUMP_FUNCTIONS`` in the libpq psycopg loaded (its own copy for psycopg-binary, the
    system's otherwise); None when it cannot be told from another libpq in the process."""
    import psycopg.pq  # noqa: F401  (loads libpq)

    return library_functions(("libpq",), _PUMP_FUNCTIONS)


class LibpqPump(CPump):
    """The C pump over libpq, its failures the exceptions psycopg raises for them (class by SQLSTATE)."""

    def error(self, session: Any, reported: tuple) -> Exception:  # a PostgresSession
        sqlstate, message = reported
        return libpq_error(sqlstate, message, session.encoding)


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
        from maximus.engines._libpq_pump import Pump as Native
    except ImportError:
        return PythonPump()
    addresses = libpq_functions()
    return PythonPump() if addresses is None else LibpqPump(Native(addresses))
