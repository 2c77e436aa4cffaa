"""Builds the io table: rows in id order, in bulk, a commit per chunk; then the key and statistics; then measures
the table's bytes on disk and records what it built."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from maximus.engines.base import Engine, Session
from maximus.workloads import build_record
from maximus.workloads.base import DatabaseInfo, LoadResult, Progress
from maximus.workloads.io import schema
from maximus.workloads.io.settings import ID_BYTES, TableSettings

FAMILY = "io"  # what the build records: io-random's and io-scan's databases are the same
CHUNK_BYTES = 16 << 20  # rows written per bulk insert and commit: bounded transactions, few round trips
# Random alphanumerics: a compressing file system (a storage layout under test) cannot shrink the table to nothing,
# and saves at most about a quarter of it (62 symbols: 5.95 bits a byte)
_ALPHABET = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


@dataclass(frozen=True)
class IoBuild:
    """What a build recorded of its table (``DatabaseInfo.inputs``): what the draws and the check rely on, and the
    bytes a scan reads."""

    table_mb: int  # as the settings gave it
    row_bytes: int
    rows: int
    table_bytes: int  # the table on disk as the engine counts it (its rows, their headers and their pages)

    @property
    def payload_bytes(self) -> int:
        return self.row_bytes - ID_BYTES


def load(engine: Engine, settings: TableSettings, seed: int, progress: Progress) -> LoadResult:
    """Provision ``engine``'s database and fill it; time all of it. The payloads come from ``seed``."""
    started = time.perf_counter()
    engine.provision()
    session = engine.connect()
    try:
        for statement in schema.schema_statements(engine.dialect, settings.payload_bytes):
            session.execute(statement)
        _populate(engine, session, settings, seed, progress)
        for statement in schema.after_load_statements(engine.dialect):
            session.execute(statement)
        built = IoBuild(settings.table_mb, settings.row_bytes, settings.rows, _table_bytes(engine, session))
        seconds = time.perf_counter() - started
        _write_meta(session, built, seed, seconds, engine.creation_settings())
    finally:
        session.close()
    return LoadResult(settings.table_mb, seed, seconds, expected_rows(settings), built)


def expected_rows(settings: TableSettings) -> dict[str, int]:
    return {schema.TABLE: settings.rows}


def _populate(engine: Engine, session: Session, settings: TableSettings, seed: int, progress: Progress) -> None:
    rng = np.random.default_rng(seed)
    chunk = max(1, CHUNK_BYTES // settings.row_bytes)
    for first, end in _chunks(settings.rows, chunk):
        ids = np.arange(first, end, dtype=np.int64)
        session.begin()
        engine.bulk_insert_columns(session, schema.TABLE, ("id", "payload"),
                                   (ids, _payloads(rng, len(ids), settings.payload_bytes)))
        session.commit()
        progress(schema.TABLE, end - first)


def _payloads(rng: np.random.Generator, count: int, width: int) -> np.ndarray:
    """``count`` payloads of ``width`` random alphanumerics each, as fixed-width bytes."""
    letters = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(count, width), dtype=np.uint8)]
    return letters.view(f"S{width}").reshape(count)


def _table_bytes(engine: Engine, session: Session) -> int:
    row = session.fetchone(schema.table_bytes_sql(engine.dialect))
    return int(row[0]) if row and row[0] is not None else 0


def _write_meta(session: Session, built: IoBuild, seed: int, seconds: float,
                creation_settings: dict[str, str]) -> None:
    own = {"table_mb": built.table_mb, "rows": built.rows, "row_bytes": built.row_bytes,
           "table_bytes": built.table_bytes}
    build_record.write(session, FAMILY, own, seed, seconds, creation_settings)


def read_info(session: Session) -> DatabaseInfo | None:
    """What a finished io build recorded, or None for anything else (not ours, or a load that never ended).
    ``inputs``: its ``IoBuild``; its scale, the table's MiB as the settings give them."""
    meta = build_record.read(session, FAMILY)
    if meta is None:
        return None
    built = IoBuild(*(int(meta[key]) for key in ("table_mb", "row_bytes", "rows", "table_bytes")))
    return DatabaseInfo(built.table_mb, *build_record.common(meta), built)


def mark_used(session: Session) -> None:
    """Nothing changes the rows, but the flag says a run has read them: their pages may be in the caches."""
    build_record.mark_used(session)


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    """[first, end) ranges of ``size`` covering 1..``total``."""
    for first in range(1, total + 1, size):
        yield first, min(first + size, total + 1)
