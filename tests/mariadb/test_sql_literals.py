"""A stored-function call's parameters as SQL literals: the C conversion (_mariadb_pump.c's sql_literals) must write
the bytes the Python reference (literals.sql_literal) writes; the server reads them back in
test_mariadb_pump.py."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
from MySQLdb import _mysql

from maximus.engines.mariadb import MariaDBEngine, literals

VALUES = [
    (1, 3, 1234, [12, 345, 6789, 100000, 5], [1, 1, 2], [5, 3, 10]),  # a New-Order's
    (1, 2, 1, 3, None, "BARBARBAR", "123.45"),  # a Payment's by name
    (None, 0, -1, -5, 2**31, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**80),
    ("", "a'b", 'a"b', "back\\slash", "nul\x00", "lines\n\r", "ctrl-z\x1a", "é€ ünï", "%s?", "x" * 6000),
    ([], (), [True, False], [1, "x"], [2**70], [None], [[1, 2]], [1.5], list(range(-2500, 2500)), (7, 8)),
    (1.5, -0.0, 1e-05, 12345678901234567890.0, Decimal("12.30"), True, False, datetime(2024, 5, 1, 12, 0, 0, 123456)),
    (b"by'tes", bytearray(b"x")),
    [7, [8, 9]],  # a list of parameters, not only a tuple
    tuple(range(1000)),
]


def _c_literals(params: object) -> tuple[bytes, ...]:
    return literals._c_sql_literals(literals.sql_literal, params)


@pytest.mark.parametrize("params", VALUES, ids=range(len(VALUES)))
def test_the_c_conversion_writes_the_bytes_the_python_one_writes(params: tuple) -> None:
    assert _c_literals(params) == literals._sql_literals(params)


def test_the_c_conversion_raises_what_the_python_one_raises() -> None:
    for value, kind in ((float("inf"), _mysql.ProgrammingError), ("\udc80", UnicodeEncodeError)):
        with pytest.raises(kind):
            literals.sql_literal(value)
        with pytest.raises(kind):
            _c_literals((1, value))
    with pytest.raises(TypeError, match="must be bytes"):
        literals._c_sql_literals(lambda value: "text", [1.5])


def test_the_c_conversion_holds_the_parameters_while_python_code_runs() -> None:
    """The reference, called for a value C does not write, may be any code: the parameters are converted as
    they were when the conversion was called, without a crash."""
    params: list = [1.5, [1, 2], "x"]

    def clearing(value: object) -> bytes:
        params.clear()
        _ = [["reused"] * 5 for _ in range(50)]  # would take the freed list's memory
        return literals.sql_literal(value)

    assert literals._c_sql_literals(clearing, params) == (b"1.5e0", b"'[1,2]'", b"'x'")


def test_the_engine_converts_with_the_compiled_function() -> None:
    assert literals._c_sql_literals is not None, \
        "maximus.engines._mariadb_pump was not compiled: pip install -e . needs a C compiler (docs/mariadb.md)"
    assert MariaDBEngine.dialect.call_parameters((1, "a", [2])) == (b"1", b"'a'", b"'[2]'")
