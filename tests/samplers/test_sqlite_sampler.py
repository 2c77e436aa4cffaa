"""The SQLite sampler counts what SQLite itself counts: commits that wrote, WAL resets, file sizes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from maximus.samplers.base import SamplingContext
from maximus.samplers.sqlite import Growth, SQLiteSampler


def _connect(path: Path, journal_mode: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(f"PRAGMA journal_mode = {journal_mode}").fetchall()
    connection.execute("PRAGMA wal_autocheckpoint = 5").fetchall()
    return connection


def _transactions(connection: sqlite3.Connection, writes: int) -> None:
    """``writes`` committed writes, plus reads, empty write transactions and rollbacks, which must not count."""
    for _ in range(writes):
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO t (b) VALUES (randomblob(3000))")
        connection.execute("COMMIT")
        connection.execute("SELECT count(*) FROM t").fetchall()
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("COMMIT")
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("DELETE FROM t")
        connection.execute("ROLLBACK")


def _readings(sampler: SQLiteSampler) -> dict[str, float]:
    return {r.name + "".join(f"{{{v}}}" for k, v in sorted(r.labels.items()) if k == "file"): r.value
            for r in sampler.read()}


@pytest.mark.parametrize("journal_mode", ["delete", "truncate", "wal"])
def test_commits_that_wrote_are_counted_exactly_even_after_the_writer_closed(tmp_path: Path,
                                                                             journal_mode: str) -> None:
    path = tmp_path / "db.sqlite"
    writer = _connect(path, journal_mode)
    writer.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b BLOB)")
    sampler = SQLiteSampler(path, wal=journal_mode == "wal", exclusive=False)
    assert sampler.open(SamplingContext({})) == []
    assert _readings(sampler)["commits_total"] == 0
    _transactions(writer, 40)
    writer.close()  # the terminals exit before the monitor's last reading
    readings = _readings(sampler)
    sampler.close()
    assert readings["commits_total"] == 40
    assert readings["file_bytes{db}"] == path.stat().st_size > 40 * 3000
    if journal_mode == "wal":
        assert readings["wal_resets_total"] >= 5  # autocheckpoint every 5 pages, each insert about a page
        assert readings["file_bytes{wal}"] > 0 and readings["file_bytes{shm}"] > 0
    else:
        assert "wal_resets_total" not in readings


def test_wal_with_exclusive_locking_says_the_counter_is_not_observable(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    _connect(path, "wal").close()
    sampler = SQLiteSampler(path, wal=True, exclusive=True)
    notes = sampler.open(SamplingContext({}))
    assert any("commit counter is not observable" in note for note in notes)
    assert "commits_total" not in _readings(sampler)


def test_growth_survives_a_wrap_and_a_file_made_anew() -> None:
    growth = Growth(2**32 - 3)
    assert growth.update(2) == 5  # wrapped past 2**32
    assert growth.update(10) == 13
    assert growth.update(4) == 17  # started again from 0: 4 more
    assert growth.update(None) == 17  # file absent for a moment: nothing learnt
