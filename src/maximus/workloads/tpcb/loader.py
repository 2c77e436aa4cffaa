"""Builds a TPC-B database as ``pgbench -i`` does: branches, tellers and accounts with zero balances, an empty
history, then keys and statistics; and records what it built."""

from __future__ import annotations

import time
from typing import Iterator

import numpy as np

from maximus.engines.base import Dialect, Engine, Session
from maximus.workloads import build_record
from maximus.workloads.base import DatabaseInfo, LoadResult, Progress
from maximus.workloads.statements import for_dialect
from maximus.workloads.tpcb import schema
from maximus.workloads.tpcb.settings import TELLERS_PER_BRANCH, TpcbSettings

CHUNK_ROWS = 100_000  # accounts written per bulk insert: a branch's at the standard size
# pgbench -i ends with VACUUM ANALYZE on PostgreSQL, which also sets the pages' visibility; the others gather
# statistics only
_STATISTICS = {"analyze": "ANALYZE {}"}
_OWN_STATISTICS = {"postgres": {"analyze": "VACUUM ANALYZE {}"}, "mariadb": {"analyze": "ANALYZE TABLE {}"}}
WORKLOAD = "tpcb"


def load(engine: Engine, settings: TpcbSettings, seed: int, progress: Progress) -> LoadResult:
    """Provision ``engine``'s database and fill it; time all of it. Nothing is drawn at random (every balance
    starts at zero), so ``seed`` is only recorded."""
    started = time.perf_counter()
    engine.provision()
    session = engine.connect()
    try:
        for statement in schema.schema_statements(engine.dialect):
            session.execute(statement)
        rows = _populate(engine, session, settings, progress)
        for statement in schema.key_statements(engine.dialect) + _statistics(engine.dialect):
            session.execute(statement)
        seconds = time.perf_counter() - started
        _write_meta(session, settings, seed, seconds, engine.creation_settings())
    finally:
        session.close()
    return LoadResult(settings.scale, seed, seconds, rows, settings.accounts_per_branch)


def expected_rows(settings: TpcbSettings) -> dict[str, int]:
    branches = settings.scale
    return {"branches": branches, "tellers": branches * TELLERS_PER_BRANCH,
            "accounts": branches * settings.accounts_per_branch}


def _populate(engine: Engine, session: Session, settings: TpcbSettings, progress: Progress) -> dict[str, int]:
    expected = expected_rows(settings)
    session.begin()
    for table, count in (("branches", expected["branches"]), ("tellers", expected["tellers"])):
        _write(engine, session, table, _rows(table, 1, count + 1, settings))
        progress(table, count)
    session.commit()
    for first, end in _chunks(expected["accounts"], CHUNK_ROWS):  # a commit each: bounded transactions
        session.begin()
        _write(engine, session, "accounts", _rows("accounts", first, end, settings))
        session.commit()
        progress("accounts", end - first)
    return {**expected, "history": 0}


def _write(engine: Engine, session: Session, table: str, columns: dict[str, np.ndarray]) -> None:
    engine.bulk_insert_columns(session, table, tuple(columns), tuple(columns.values()))


def _rows(table: str, first: int, end: int, settings: TpcbSettings) -> dict[str, np.ndarray]:
    """Rows ``first``..``end - 1`` of ``table`` as columns: a key, its branch, a zero balance, a blank filler."""
    keys = np.arange(first, end, dtype=np.int64)
    width = schema.TABLES_BY_NAME[table].filler_width()
    filler = np.full(len(keys), b" " * width, dtype=f"S{width}")
    zero = np.zeros(len(keys), dtype=np.int64)
    if table == "branches":
        return {"bid": keys, "bbalance": zero, "filler": filler}
    per_branch = TELLERS_PER_BRANCH if table == "tellers" else settings.accounts_per_branch
    branch = (keys - 1) // per_branch + 1
    key, balance = ("tid", "tbalance") if table == "tellers" else ("aid", "abalance")
    return {key: keys, "bid": branch, balance: zero, "filler": filler}


def _statistics(dialect: Dialect) -> list[str]:
    analyze = for_dialect(_STATISTICS, _OWN_STATISTICS, dialect.name)["analyze"]
    return [analyze.format(table.name) for table in schema.TABLES]


def _write_meta(session: Session, settings: TpcbSettings, seed: int, seconds: float,
                creation_settings: dict[str, str]) -> None:
    own = {"scale": settings.scale, "accounts_per_branch": settings.accounts_per_branch}
    build_record.write(session, WORKLOAD, own, seed, seconds, creation_settings)


def read_info(session: Session) -> DatabaseInfo | None:
    """What a finished TPC-B build recorded, or None for anything else (not ours, or a load that never ended).
    ``inputs``: its accounts per branch, which the transactions draw from."""
    meta = build_record.read(session, WORKLOAD)
    if meta is None:
        return None
    return DatabaseInfo(int(meta["scale"]), *build_record.common(meta), int(meta["accounts_per_branch"]))


def mark_used(session: Session) -> None:
    """A run changes the balances: the fresh-state condition no longer applies."""
    build_record.mark_used(session)


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    """[first, end) ranges of ``size`` covering 1..``total``."""
    for first in range(1, total + 1, size):
        yield first, min(first + size, total + 1)
