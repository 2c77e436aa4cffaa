"""The SQLite sampler: file sizes, commits and WAL resets, read from the database's own files.

SQLite is a library inside the terminals' processes; Python's ``sqlite3`` does not expose its
per-connection statistics (``sqlite3_db_status``: page-cache hits and misses), and SQLite has no
wait interface. What the files themselves show is honest and cheap to read without taking any lock:

- ``file_bytes{file}``: sizes of the database, its ``-wal``, ``-journal`` and ``-shm`` (0 when absent).
- ``commits_total{counts=writes, from}``: SQLite's own count of committed write transactions. In
  rollback-journal modes it is the *file change counter* of the database header (offset 24), which
  SQLite bumps on every commit that changed the file; in WAL mode it is ``iChange`` of the WAL-index
  header in ``-shm`` (offset 8), bumped on every commit. Read-only transactions and rollbacks do not
  count. Counted from 0 when the sampler opens.
- ``wal_resets_total``: WAL mode only. When a checkpoint has copied the whole WAL into the database,
  the next writer starts the WAL again from its beginning and bumps the *checkpoint sequence number*
  of the WAL header (offset 12): the checkpoints that can be observed from outside.

In WAL mode the sampler keeps one idle connection open for the run: the last connection to close
deletes ``-wal`` and ``-shm``, and the final reading after the terminals have exited needs them.
With ``locking_mode=exclusive`` SQLite keeps the WAL index in heap memory, so in WAL mode the commit
counter is not observable then; no connection is opened either, since it would wait for the lock.
"""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

from maximus.samplers.base import Reading, Sampler, SamplingContext

_FILES = {"db": "", "wal": "-wal", "journal": "-journal", "shm": "-shm"}
_FILE_CHANGE_COUNTER = (24, ">I")  # database header: big-endian
_WAL_INDEX_CHANGE = (8, "=I")  # WAL-index header in -shm: native byte order
_WAL_CHECKPOINT_SEQUENCE = (12, ">I")  # WAL header: big-endian


def read_u32(path: Path, offset: int, layout: str) -> int | None:
    """A 32-bit field of a file, or None when the file is missing or too short."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read(4)
    except FileNotFoundError:
        return None
    return struct.unpack(layout, data)[0] if len(data) == 4 else None


class Growth:
    """A counter that starts at 0 and adds the growth of a raw 32-bit field between readings.

    A field that goes down was started again (a WAL file made anew) or wrapped: the growth is then
    taken modulo 2**32 when the drop is a wrap, else as the new value.
    """

    def __init__(self, first: int | None) -> None:
        self.last, self.total = first, 0

    def update(self, raw: int | None) -> int:
        if raw is not None and self.last is not None:
            drop_is_wrap = raw < self.last and self.last - raw > 2**31
            self.total += (raw - self.last) % 2**32 if raw >= self.last or drop_is_wrap else raw
        if raw is not None:
            self.last = raw
        return self.total


class SQLiteSampler(Sampler):
    """One SQLite database's files (see the module's docstring)."""

    source = "sqlite"

    def __init__(self, path: Path, wal: bool, exclusive: bool) -> None:
        self.path = Path(path)
        self.wal = wal
        self.exclusive = exclusive
        self._keeper: sqlite3.Connection | None = None
        self._commits: Growth | None = None
        self._resets: Growth | None = None

    def open(self, context: SamplingContext) -> list[str]:
        if self.wal and self.exclusive:
            return ["WAL with locking_mode=exclusive keeps the WAL index in memory: SQLite's commit counter is "
                    "not observable, so the commit cross-check is skipped"]
        if self.wal:
            self._keeper = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            # fetchall() runs the statement to its end, so no read transaction stays open to stop checkpoints
            self._keeper.execute("SELECT count(*) FROM sqlite_master").fetchall()
            self._resets = Growth(self._raw(_WAL_CHECKPOINT_SEQUENCE, "wal"))
        self._commits = Growth(self._commit_field())
        return []

    def read(self) -> list[Reading]:
        readings = [Reading("file_bytes", self._size(suffix), "bytes", {"file": name})
                    for name, suffix in _FILES.items()]
        if self._commits is not None:
            source = "wal_index" if self.wal else "file_change_counter"
            readings.append(Reading("commits_total", self._commits.update(self._commit_field()), "count",
                                    {"counts": "writes", "from": source}))
        if self._resets is not None:
            readings.append(Reading("wal_resets_total", self._resets.update(self._raw(_WAL_CHECKPOINT_SEQUENCE,
                                                                                      "wal")), "count"))
        return readings

    def close(self) -> None:
        if self._keeper is not None:
            self._keeper.close()
            self._keeper = None

    def _file(self, name: str) -> Path:
        return self.path.with_name(self.path.name + _FILES[name])

    def _size(self, suffix: str) -> int:
        try:
            return self.path.with_name(self.path.name + suffix).stat().st_size
        except FileNotFoundError:
            return 0

    def _raw(self, field: tuple[int, str], name: str) -> int | None:
        offset, layout = field
        return read_u32(self._file(name), offset, layout)

    def _commit_field(self) -> int | None:
        return self._raw(_WAL_INDEX_CHANGE, "shm") if self.wal else self._raw(_FILE_CHANGE_COUNTER, "db")
