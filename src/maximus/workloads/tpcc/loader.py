"""Builds a TPC-C database: schema, initial population (4.3.3.1), indexes, statistics, metadata."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Iterator

from maximus import __version__
from maximus.engines.base import Engine, Session
from maximus.errors import UserError
from maximus.workloads.tpcc import generate, schema
from maximus.workloads.tpcc.random import NURandConstants

Progress = Callable[[str, int], None]  # (table, rows just written)


@dataclass(frozen=True)
class LoadResult:
    warehouses: int
    seed: int
    seconds: float
    rows: dict[str, int]
    constants: NURandConstants


@dataclass(frozen=True)
class DatabaseInfo:
    """What a loaded database says about itself (the ``maximus_meta`` table)."""

    warehouses: int
    seed: int
    constants: NURandConstants
    load_seconds: float
    fresh: bool
    creation_settings: dict[str, str]


def load(engine: Engine, warehouses: int, seed: int, progress: Progress = lambda table, rows: None) -> LoadResult:
    """Provision ``engine``'s database and fill it with ``warehouses`` warehouses; time all of it."""
    if warehouses < 1:
        raise UserError(f"warehouses must be at least 1, got {warehouses}")
    constants = NURandConstants.for_load(seed)
    started = time.perf_counter()
    engine.provision()
    session = engine.connect()
    try:
        rows = _populate(engine, session, warehouses, seed, constants, progress)
        for statement in schema.index_statements() + ["ANALYZE"]:
            session.execute(statement)
        seconds = time.perf_counter() - started
        _write_meta(session, warehouses, seed, constants, seconds, engine.creation_settings())
    finally:
        session.close()
    return LoadResult(warehouses, seed, seconds, rows, constants)


def _populate(engine: Engine, session: Session, warehouses: int, seed: int, constants: NURandConstants,
              progress: Progress) -> dict[str, int]:
    for statement in schema.schema_statements(engine.dialect):
        session.execute(statement)
    rows: dict[str, int] = {}
    since = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    for chunks in _chunk_groups(warehouses, seed, constants.c_last, since):
        session.begin()
        for chunk in chunks:
            engine.bulk_insert(session, chunk.table, chunk.columns, chunk.rows)
            rows[chunk.table] = rows.get(chunk.table, 0) + len(chunk.rows)
            progress(chunk.table, len(chunk.rows))
        session.commit()
    return rows


def _chunk_groups(warehouses: int, seed: int, c_load: int, since: str) -> Iterator[Iterator[generate.Chunk]]:
    """One group per commit: the items, then one warehouse at a time."""
    yield generate.items(seed)
    for w_id in range(1, warehouses + 1):
        yield generate.warehouse_chunks(seed, w_id, c_load, since)


def _write_meta(session: Session, warehouses: int, seed: int, constants: NURandConstants, seconds: float,
                creation_settings: dict[str, str]) -> None:
    meta = {
        "workload": "tpcc", "warehouses": warehouses, "seed": seed, "c_load_c_last": constants.c_last,
        "c_load_c_id": constants.c_id, "c_load_ol_i_id": constants.ol_i_id, "load_seconds": round(seconds, 3),
        "fresh": 1, "creation_settings": json.dumps(creation_settings), "maximus_version": __version__,
        "loaded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    session.begin()
    for name, value in meta.items():
        session.execute(f"INSERT INTO {schema.META_TABLE} (name, value) VALUES (?, ?)", (name, str(value)))
    session.commit()


def read_info(session: Session) -> DatabaseInfo | None:
    """The metadata of a loaded database, or None when it is not a complete Maximus TPC-C load."""
    try:
        meta = dict(session.fetchall(f"SELECT name, value FROM {schema.META_TABLE}"))
    except Exception:  # no such table: not ours, or the load never finished
        session.rollback()
        return None
    if meta.get("workload") != "tpcc":
        return None
    constants = NURandConstants(int(meta["c_load_c_last"]), int(meta["c_load_c_id"]), int(meta["c_load_ol_i_id"]))
    return DatabaseInfo(int(meta["warehouses"]), int(meta["seed"]), constants, float(meta["load_seconds"]),
                        meta["fresh"] == "1", json.loads(meta["creation_settings"]))


def mark_used(session: Session) -> None:
    """A run changes the data: consistency condition 11 (3.3.2.11) no longer applies."""
    session.execute(f"UPDATE {schema.META_TABLE} SET value = '0' WHERE name = 'fresh'")
