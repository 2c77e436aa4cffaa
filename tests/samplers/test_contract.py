"""The Sampler contract, checked for every sampler (one suite, parametrised)."""

from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path
from typing import Callable

import pytest

from maximus.engines import ENGINES
from maximus.samplers.base import Reading, Sampler, SamplingContext
from maximus.samplers.os_linux import OsSampler
from maximus.samplers.sqlite import SQLiteSampler


def _database(tmp_path: Path, journal_mode: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "db.sqlite"
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(f"PRAGMA journal_mode = {journal_mode}").fetchall()
    connection.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)")
    connection.close()
    return path


def _work(path: Path) -> None:
    """Commits, file writes and some CPU: every counter has a chance to move."""
    connection = sqlite3.connect(path, isolation_level=None)
    for i in range(20):
        connection.execute("INSERT INTO t (b) VALUES (?)", ("x" * 2000,))
    connection.close()
    sum(i * i for i in range(200_000))


FACTORIES: dict[str, Callable[[Path], tuple[Sampler, Path]]] = {
    "os": lambda tmp: (OsSampler(tmp), _database(tmp, "delete")),
    "sqlite-delete": lambda tmp: (SQLiteSampler(path := _database(tmp, "delete"), False, False), path),
    "sqlite-wal": lambda tmp: (SQLiteSampler(path := _database(tmp, "wal"), True, False), path),
}


@pytest.fixture(params=sorted(FACTORIES))
def opened(request: pytest.FixtureRequest, tmp_path: Path):
    sampler, path = FACTORIES[request.param](tmp_path)
    notes = sampler.open(SamplingContext({"client": (os.getpid(),), "driver": (os.getppid(),)}))
    yield sampler, path, notes
    sampler.close()


def _check_readings(readings: list[Reading]) -> None:
    assert readings
    for r in readings:
        assert isinstance(r, Reading) and r.name.isidentifier() and isinstance(r.unit, str)
        assert isinstance(r.value, (int, float)) and math.isfinite(r.value), r
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in r.labels.items()), r


def test_open_returns_notes_and_read_returns_well_formed_readings(opened) -> None:
    sampler, _, notes = opened
    assert isinstance(sampler.source, str) and sampler.source
    assert all(isinstance(note, str) for note in notes)
    _check_readings(sampler.read())


def test_counters_never_decrease_and_some_move_with_work(opened) -> None:
    sampler, path, _ = opened
    before = {(r.name, tuple(sorted(r.labels.items()))): r.value for r in sampler.read()}
    _work(path)
    after = {(r.name, tuple(sorted(r.labels.items()))): r.value for r in sampler.read()}
    counters = [key for key in before if key[0].endswith("_total")]
    assert counters
    assert all(after[key] >= before[key] for key in counters)
    assert any(after[key] > before[key] for key in counters)


def test_close_without_open_does_not_raise(tmp_path: Path) -> None:
    for name in FACTORIES:
        sampler, _ = FACTORIES[name](tmp_path / name)
        sampler.close()


@pytest.mark.parametrize("engine_class", list(ENGINES.values()), ids=lambda cls: cls.name)
def test_every_engine_hands_out_fresh_samplers(engine_class, tmp_path: Path) -> None:
    engine = engine_class(tmp_path, "db", {})
    first, second = engine.samplers(), engine.samplers()
    assert all(isinstance(s, Sampler) for s in first)
    assert not set(map(id, first)) & set(map(id, second))  # one run's state never leaks into the next
