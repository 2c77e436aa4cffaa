"""The parameters of a stored-function call in PostgreSQL's text input form: the C conversion
(_libpq_pump.c) must write the bytes the Python reference (postgres._text_parameters) writes, and the
server must read them back as the values they were."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Callable, Iterator

import pytest

from maximus.engines import postgres
from maximus.engines.postgres import PostgresEngine

VALUES = [
    (1, 3, 1234, [12, 345, 6789, 100000, 5], [1, 1, 2], [5, 3, 10]),  # a New-Order's
    (None, "BARBARBAR", "123.45", 12.5, Decimal("1.10"), True, False),
    (0, -1, -5, 2**31, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**80),
    ([], (), [None, "a", 1.5, True, 2**80, -2**63, 0, -10], (1, 2), [[1, [2, 3]]], ["é€", "x"]),
    ("é€ ünï",),
    [7, [8, 9]],  # a list of parameters, not only a tuple
    ("x" * 6000, list(range(-2500, 2500)), ["é€"] * 700),  # past the C buffer's first 512 bytes
    tuple(range(1000)),
]


@pytest.mark.parametrize("params", VALUES, ids=range(len(VALUES)))
def test_the_c_conversion_writes_the_bytes_the_python_one_writes(params: tuple) -> None:
    assert postgres._c_text_parameters(params) == postgres._text_parameters(params)


def test_the_c_conversion_raises_what_the_python_one_raises() -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise ValueError("no text")

    for params in ((Unprintable(),), ([1, Unprintable()],)):
        with pytest.raises(ValueError, match="no text"):
            postgres._text_parameters(params)
        with pytest.raises(ValueError, match="no text"):
            postgres._c_text_parameters(params)
    with pytest.raises(UnicodeEncodeError):
        postgres._c_text_parameters(("\udc80",))  # a lone surrogate: str.encode() refuses it too


def test_the_c_conversion_holds_the_parameters_while_str_runs_python_code() -> None:
    """An element's str() may change the list it came in: the C conversion must neither crash nor read
    freed memory. It converts the parameters as they were when it was called."""
    class Clearing:
        def __init__(self, victim: list) -> None:
            self.victim = victim

        def __str__(self) -> str:
            self.victim.clear()
            _ = [["reused"] * 5 for _ in range(50)]  # would take the freed lists' memory
            return "x"

    params: list = [None, [1, 2], 3]
    params[0] = Clearing(params)
    assert postgres._c_text_parameters(params) == [b"x", b"{1,2}", b"3"]
    inner: list = [None, 1, 2]
    inner[0] = Clearing(inner)
    assert postgres._c_text_parameters(([7], inner)) == [b"{7}", b"{x}"]


def test_the_engine_converts_with_the_compiled_function() -> None:
    assert postgres._c_text_parameters is not None, \
        "maximus.engines._libpq_pump was not compiled: pip install -e . needs a C compiler (docs/postgres.md)"
    assert PostgresEngine.dialect.call_parameters is postgres._c_text_parameters


@pytest.fixture(scope="module")
def engine(server_workdir: Path, server_with: Callable) -> Iterator[PostgresEngine]:
    with server_with(server_workdir, "text_parameters", "SELECT 1") as engine:
        yield engine


def test_the_server_reads_the_text_back_as_the_values(engine: PostgresEngine) -> None:
    session = engine.connect()
    try:
        pgconn = session.connection.pgconn
        numbers, names = [0, -1, 2**63 - 1, -2**63, 100000], ["é€", "BAR BAR", "x"]
        texts = postgres._c_text_parameters((numbers, names, None, -7, "é€ ünï", Decimal("12.30")))
        result = pgconn.exec_params(b"SELECT $1::bigint[] = $7::bigint[], $2::text[] = $8::text[], $3::int IS NULL, "
                                    b"$4::int = -7, $5::text = $9::text, $6::numeric = 12.30",
                                    texts + [b"{0,-1,9223372036854775807,-9223372036854775808,100000}",
                                             "{é€,\"BAR BAR\",x}".encode(), "é€ ünï".encode()])
        assert result.error_message == b""
        assert [result.get_value(0, column) for column in range(6)] == [b"t"] * 6
    finally:
        session.close()
