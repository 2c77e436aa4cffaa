"""A stored-function call's parameters as SQL literals, as mysqlclient writes them: what ``Session.call`` and the pumps
send. Imported when a MariaDB engine is used (``MariaDBEngine.dialect``), never with the engine's package: mysqlclient
is an extra (``maximus[mariadb]``)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from MySQLdb import _mysql
from MySQLdb.converters import conversions as _ENCODERS

from maximus.engines.mariadb.sessions import ARRAYS, JSON_TEXT


def sql_literal(value: Any) -> bytes:
    """A stored-function call's parameter as an SQL literal, as the driver writes one for a UTF-8 connection; an
    array (New-Order's lines) as JSON text, which a function's JSON parameter takes (the driver would write a list
    as ``(1,2,3)``). The reference for the C conversion (``_mariadb_pump.sql_literals``)."""
    if value.__class__ in ARRAYS:
        value = JSON_TEXT(value)
    if isinstance(value, str):
        return _mysql.string_literal(value.encode())
    literal = _mysql.escape(value, _ENCODERS)
    return literal if isinstance(literal, bytes) else literal.encode()


def _sql_literals(params: Sequence[Any]) -> tuple[bytes, ...]:
    return tuple(map(sql_literal, params))


try:
    from maximus.engines._mariadb_pump import sql_literals as _c_sql_literals
except ImportError:  # built without a C compiler
    _c_sql_literals = None

# What Session.call and the pumps take: a call's parameters as SQL literals, written in C when it is built.
call_parameters: Callable[[Sequence[Any]], tuple[bytes, ...]] = (
    functools.partial(_c_sql_literals, sql_literal) if _c_sql_literals else _sql_literals)
