"""What the PostgreSQL tests share: a managed server with a few functions of the test's own (the two pumps the
multiplexed driver's tests run on, ``make_pump``, are in tests/conftest.py)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Callable, ContextManager, Iterator

import pytest

from maximus.engines.postgres import PostgresEngine


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
