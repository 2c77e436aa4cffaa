"""The Engine contract, checked for every registered engine (one suite, parametrised).

PostgreSQL runs as a managed server started by the tests (initdb once, then a server per test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from maximus.api import running
from maximus.engines import ENGINES, Engine
from maximus.errors import UserError
from maximus.records import Outcome

FAIL_FAST_ON_LOCKS = {"sqlite": {"busy_timeout": "0"}, "postgres": {"lock_timeout": "200"}}


@pytest.fixture(params=sorted(ENGINES), ids=str)
def engine_class(request: pytest.FixtureRequest) -> type[Engine]:
    return ENGINES[request.param]


@pytest.fixture
def started(engine_class: type[Engine], server_workdir: Path, tmp_path: Path) -> Iterator[Callable[..., Engine]]:
    """A factory of running engines, stopped at the end of the test."""
    engines: list[Engine] = []
    workdir = server_workdir if engine_class.capabilities.managed_server else tmp_path

    def make(settings: dict | None = None, database: str = "contract") -> Engine:
        engine = engine_class(workdir, database, settings or {})
        engine.start()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.stop()


def test_every_knob_default_parses_and_is_described(engine_class: type[Engine]) -> None:
    catalogue = engine_class.catalogue({})
    assert len(list(catalogue)) >= 9
    for knob in catalogue:
        assert knob.description and knob.applies, knob.name
    for name in engine_class.documented_knobs():
        knob = catalogue.get(name)
        assert knob.parse(knob.default) == knob.default or knob.default == ""


def test_unknown_knob_suggests_the_closest_name(engine_class: type[Engine], tmp_path: Path) -> None:
    name = engine_class.documented_knobs()[0]
    with pytest.raises(UserError, match=f"did you mean {name}"):
        engine_class(tmp_path, "db", {name[:-1] + "x": "1"})


def test_knob_names_are_taken_in_any_case_and_kept_in_the_engines_spelling(engine_class: type[Engine],
                                                                            tmp_path: Path) -> None:
    knob = next(k for k in engine_class.catalogue({}) if k.name != "bin_dir")
    assert engine_class(tmp_path, "db", {knob.name.upper(): knob.default}).settings == {knob.name: knob.default}


def _load_one_row(engine: Engine, value: str) -> None:
    engine.provision()
    session = engine.connect()
    session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(10))")
    session.begin()
    session.execute("INSERT INTO t (a, b) VALUES (?, ?)", (1, value))
    session.commit()
    session.close()


def test_provision_connect_snapshot_restore(started: Callable[..., Engine]) -> None:
    engine = started()
    _load_one_row(engine, "pristine")
    engine.snapshot()
    assert engine.has_snapshot()
    session = engine.connect()
    session.begin()
    assert session.execute("UPDATE t SET b = ? WHERE a = ?", ("changed", 1)) == 1
    session.commit()
    session.close()
    engine.restore()
    session = engine.connect()
    assert session.fetchone("SELECT b FROM t WHERE a = ?", (1,)) == ("pristine",)
    session.close()
    engine.destroy()
    assert not engine.exists()


def test_a_database_kept_as_pristine_comes_back_with_every_restore(started: Callable[..., Engine]) -> None:
    engine = started()
    _load_one_row(engine, "older")
    engine.keep_as_pristine()
    _load_one_row(engine, "pristine")
    engine.keep_as_pristine()  # replaces the older pristine copy
    assert engine.has_snapshot()
    for _ in range(2):
        engine.restore()
        session = engine.connect()
        session.begin()
        assert session.fetchone("SELECT b FROM t WHERE a = ?", (1,)) == ("pristine",)
        assert session.execute("UPDATE t SET b = ? WHERE a = ?", ("changed", 1)) == 1
        session.commit()
        session.close()
    engine.destroy()
    assert not engine.exists()


def test_rollback_discards_and_errors_are_classified(started: Callable[..., Engine]) -> None:
    engine = started()
    engine.provision()
    session = engine.connect()
    session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)")
    session.begin()
    session.execute("INSERT INTO t (a) VALUES (?)", (1,))
    session.rollback()
    assert session.fetchall("SELECT a FROM t") == []
    with pytest.raises(Exception) as caught:
        session.execute("SELECT * FROM no_such_table")
    assert engine.classify(caught.value) is Outcome.FAILED
    session.close()


def test_a_lock_conflict_is_classified_as_retry(started: Callable[..., Engine], engine_class: type[Engine]) -> None:
    engine = started(FAIL_FAST_ON_LOCKS[engine_class.name])
    engine.provision()
    holder, waiter = engine.connect(), engine.connect()
    holder.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER)")
    holder.execute("INSERT INTO t (a, b) VALUES (1, 0)")
    holder.begin()
    holder.execute("UPDATE t SET b = b + 1 WHERE a = 1")
    with pytest.raises(Exception) as caught:
        waiter.begin()
        waiter.execute("UPDATE t SET b = b + 1 WHERE a = 1")
    assert engine.classify(caught.value) is Outcome.RETRY
    waiter.rollback()
    holder.rollback()
    holder.close()
    waiter.close()


def test_knobs_take_effect_as_the_engine_reports_them(started: Callable[..., Engine],
                                                       engine_class: type[Engine]) -> None:
    knob = {"sqlite": ("cache_size", "-4096", "-4096"), "postgres": ("work_mem", "8192kB", "8MB")}
    name, value, reported = knob[engine_class.name]
    engine = started({name: value})
    engine.provision()
    session = engine.connect()
    assert engine.reported_settings(session)[name] == reported
    session.close()


def test_running_stops_the_server_even_on_an_error(engine_class: type[Engine], server_workdir: Path) -> None:
    engine = engine_class(server_workdir, "contract", {})
    with pytest.raises(RuntimeError):
        with running(engine):
            raise RuntimeError("boom")
    with pytest.raises(Exception):
        engine.connect().fetchone("SELECT 1") if engine.capabilities.managed_server else _raise()


def _raise() -> None:
    raise RuntimeError("an embedded engine has no server to be down")
