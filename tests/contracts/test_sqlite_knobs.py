"""SQLite knobs reach the engine: what SQLite reports back matches what was asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import UserError


def test_creation_and_connection_knobs_take_effect(tmp_path: Path) -> None:
    engine = SQLiteEngine(tmp_path, "db", {"page_size": "8192", "cache_size": "64MB", "journal_mode": "WAL",
                                           "synchronous": "off", "mmap_size": "1MB", "temp_store": "memory",
                                           "wal_autocheckpoint": "500", "busy_timeout": "250"})
    engine.provision()
    session = engine.connect()
    session.execute("CREATE TABLE t (a INTEGER)")
    reported = engine.reported_settings(session)
    session.close()
    assert reported == {"page_size": "8192", "journal_mode": "wal", "synchronous": "0", "cache_size": "-65536",
                        "wal_autocheckpoint": "500", "mmap_size": "1048576", "locking_mode": "normal",
                        "temp_store": "2", "busy_timeout": "250"}
    assert engine.durability_warnings() == ["synchronous=off weakens durability"]


def test_creation_knobs_are_recorded_separately(tmp_path: Path) -> None:
    assert SQLiteEngine(tmp_path, "db", {"page_size": "16384"}).creation_settings() == {"page_size": "16384"}


@pytest.mark.parametrize(("knob", "value"), [("synchronous", "sometimes"), ("cache_size", "12parsecs"),
                                            ("wal_autocheckpoint", "-1"), ("page_size", "70000")])
def test_bad_values_name_the_knob(tmp_path: Path, knob: str, value: str) -> None:
    with pytest.raises(UserError, match=f"knob {knob}"):
        SQLiteEngine(tmp_path, "db", {knob: value})


def test_exclusive_locking_allows_one_terminal(tmp_path: Path) -> None:
    engine = SQLiteEngine(tmp_path, "db", {"locking_mode": "exclusive"})
    engine.validate_run(1)
    with pytest.raises(UserError, match="--terminals 1"):
        engine.validate_run(2)
