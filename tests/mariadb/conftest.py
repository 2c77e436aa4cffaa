"""What the MariaDB tests share: one managed server per test module, with a 1-warehouse TPC-C build (seed 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maximus import api

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


@pytest.fixture(scope="module")
def mariadb_loaded(server_workdir: Path) -> Path:
    """A work directory whose managed MariaDB server holds a pristine 1-warehouse build (seed 1)."""
    engine = api.make_engine("mariadb", server_workdir, ONE_WAREHOUSE, {})
    with api.running(engine):
        if not engine.has_snapshot():
            api.load_database(engine, ONE_WAREHOUSE, seed=1)
    return server_workdir


@pytest.fixture(autouse=True)
def own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's journal of changes to a server of the user's in a directory of its own, not the home's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
