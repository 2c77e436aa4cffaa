"""The engines' own integrity checks (``Engine.integrity_check``) find a corrupt index: bytes of one of its pages
overwritten on disk while nothing had the file open, as a torn write would leave them."""

from __future__ import annotations

import random
from pathlib import Path

from maximus.engines.base import Engine, Session
from maximus.engines.postgres import PostgresEngine
from maximus.engines.sqlite import SQLiteEngine

ROWS = 5000


def _fill(session: Session) -> None:
    session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER)")
    session.execute("CREATE INDEX t_b ON t (b)")
    session.begin()
    for a in range(1, ROWS + 1):
        session.execute("INSERT INTO t (a, b) VALUES (?, ?)", (a, (a * 7919) % 1000))
    session.commit()


def _scribble(path: Path, offset: int, length: int) -> None:
    """Seeded garbage over ``length`` bytes at ``offset``: the same corruption every run."""
    garbage = random.Random(1).randbytes(length)
    with open(path, "r+b") as file:
        file.seek(offset)
        file.write(garbage)


def _checked(engine: Engine) -> tuple[bool | None, str]:
    session = engine.connect()
    try:
        (result,) = engine.integrity_check(session)
    finally:
        session.close()
    return result.passed, result.detail


def test_sqlite_finds_an_index_page_overwritten(tmp_path: Path) -> None:
    engine = SQLiteEngine(tmp_path, "corrupt", {})
    engine.provision()
    session = engine.connect()
    try:
        _fill(session)
        (root,) = session.fetchone("SELECT rootpage FROM sqlite_master WHERE name = 't_b'") or (0,)
        (page_size,) = session.fetchone("PRAGMA page_size") or (0,)
    finally:
        session.close()
    assert _checked(engine) == (True, "")
    _scribble(engine.path, (root - 1) * page_size + 16, page_size - 16)  # the index's root page, past its header
    passed, detail = _checked(engine)
    assert passed is False and detail, detail


def test_postgres_finds_an_index_page_overwritten(server_workdir: Path) -> None:
    engine = PostgresEngine(server_workdir, "corrupt", {})
    engine.start()
    try:
        engine.provision()
        session = engine.connect()
        try:
            _fill(session)
            (relative,) = session.fetchone("SELECT pg_relation_filepath('t_b')") or ("",)
        finally:
            session.close()
        assert _checked(engine) == (True, "")
        engine.stop()
        index_file = engine.data_path() / relative
        _scribble(index_file, 8192 + 4096, 512)  # the first leaf page's tuples (page 0 is the metapage)
        engine.start()
        passed, detail = _checked(engine)
        assert passed is False and "t_b" in detail, detail
    finally:
        engine.destroy()
        engine.stop()
