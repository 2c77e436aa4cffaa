"""The Engine contract, checked for every registered engine (one suite, parametrised)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maximus.engines import ENGINES, Engine
from maximus.errors import UserError
from maximus.records import Outcome

ENGINE_CLASSES = list(ENGINES.values())


@pytest.fixture(params=ENGINE_CLASSES, ids=lambda cls: cls.name)
def engine_class(request: pytest.FixtureRequest) -> type[Engine]:
    return request.param


def test_every_knob_has_a_valid_default_and_a_description(engine_class: type[Engine]) -> None:
    for knob in engine_class.knobs:
        assert knob.parse(knob.default) == knob.default, knob.name
        assert knob.description and knob.applies


def test_unknown_knob_suggests_the_closest_name(engine_class: type[Engine], tmp_path: Path) -> None:
    name = next(iter(engine_class.knobs)).name
    with pytest.raises(UserError, match=f"did you mean {name}"):
        engine_class(tmp_path, "db", {name[:-1] + "x": "1"})


def test_provision_connect_snapshot_restore(engine_class: type[Engine], tmp_path: Path) -> None:
    engine = engine_class(tmp_path, "db", {})
    engine.provision()
    session = engine.connect()
    session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(10))")
    session.begin()
    session.execute("INSERT INTO t (a, b) VALUES (?, ?)", (1, "pristine"))
    session.commit()
    session.close()
    engine.snapshot()
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


def test_rollback_discards_and_errors_are_classified(engine_class: type[Engine], tmp_path: Path) -> None:
    engine = engine_class(tmp_path, "db", {})
    engine.provision()
    session = engine.connect()
    session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)")
    session.begin()
    session.execute("INSERT INTO t (a) VALUES (?)", (1,))
    session.rollback()
    assert session.fetchall("SELECT a FROM t") == []
    try:
        session.execute("SELECT * FROM no_such_table")
    except Exception as error:
        assert engine.classify(error) is Outcome.FAILED
    else:
        pytest.fail("a query on a missing table must raise")
    session.close()


def test_a_lock_conflict_is_classified_as_retry(engine_class: type[Engine], tmp_path: Path) -> None:
    engine = engine_class(tmp_path, "db", {"busy_timeout": "0"} if "busy_timeout" in engine_class.knobs else {})
    engine.provision()
    holder, waiter = engine.connect(), engine.connect()
    holder.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)")
    holder.begin()
    holder.execute("INSERT INTO t (a) VALUES (1)")
    with pytest.raises(Exception) as caught:
        waiter.begin()
        waiter.execute("INSERT INTO t (a) VALUES (2)")
    assert engine.classify(caught.value) is Outcome.RETRY
    holder.rollback()
    holder.close()
    waiter.close()
