"""The pristine 1-warehouse TPC-C build of the session's fixtures, restored on an engine whose server is up: for tests
that run transactions by hand (isolation, the crash test's verification)."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from maximus import api
from maximus.engines.base import Engine

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


@contextmanager
def restored_build(engine_name: str, request: pytest.FixtureRequest, built_workdir: Path,
                   tmp_path: Path) -> Iterator[Engine]:
    """SQLite on a copy of ``built_workdir``, or PostgreSQL in the ``loaded`` fixture's cluster; restored, running."""
    if engine_name == "sqlite":
        shutil.copytree(built_workdir, tmp_path / "work")
        engine = api.make_engine("sqlite", tmp_path / "work", ONE_WAREHOUSE, {})
    else:
        engine = api.make_engine("postgres", request.getfixturevalue("loaded"), ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()
        yield engine
