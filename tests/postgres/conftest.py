"""What the PostgreSQL tests share: a managed server with a few functions of the test's own, and the
two pumps (engines/pump.py) that the multiplexed driver's tests run on."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, ContextManager, Iterator

import pytest

from maximus.engines.postgres import PostgresEngine
from maximus.engines.pump import Pump, PythonPump


@contextmanager
def _server_with(workdir: Path, database: str, sql: str) -> Iterator[PostgresEngine]:
    engine = PostgresEngine(workdir, database, {})
    engine.start()
    try:
        engine.provision()
        session = engine.connect()
        session.execute(sql)
        session.close()
        yield engine
    finally:
        engine.stop()


@pytest.fixture(scope="session")
def server_with() -> Callable[[Path, str, str], ContextManager[PostgresEngine]]:
    """``with server_with(workdir, database, sql) as engine``: a managed server with an empty database in
    which ``sql`` has run, stopped at the end."""
    return _server_with


@pytest.fixture(params=["python", "libpq"])
def make_pump(request: pytest.FixtureRequest) -> Callable[[PostgresEngine], Pump]:
    """Every test that takes it runs with the pump in Python and with the engine's own (in C over libpq)."""
    if request.param == "python":
        return lambda engine: PythonPump()
    return lambda engine: engine.call_pump()
