"""The io terminals' decisions: busy, with no think times; io-random draws a row, io-scan has nothing to draw."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from maximus.engines.base import Dialect
from maximus.workloads.io.settings import Skew
from maximus.workloads.io.transactions import ReadRow, ScanTable


@dataclass(frozen=True)
class IoRunSettings:
    """What every terminal of one run shares; recorded with the run."""

    rows: int  # as the build recorded them: what the draws must stay within
    skew: Skew
    seed: int
    server_side: bool = False  # single statements: nothing to put in a stored function
    pauses: bool = False
    cold_files: str | None = None  # io-scan with cold caches: the database's files, dropped from the cache per scan
    # io-random's read is one call, which the engine's pump can send for busy terminals sharing a process; a scan with
    # cold caches has the client drop them before each call, and a scan's client costs nothing beside its seconds
    one_call: bool = False


class RowDrawer:
    """io-random's ids: uniform over the table, or ``skew.hot_reads`` of them uniform over the hot set (ids
    1..``hot_rows``, the table's first pages) and the rest uniform over the other rows."""

    def __init__(self, rows: int, skew: Skew, rng: random.Random) -> None:
        self.rows, self.skew, self.rng = rows, skew, rng
        # at least one hot row and one cold one, whatever the table's size (one row is read uniformly)
        self.hot_rows = 0 if skew.uniform else min(rows - 1, max(1, round(rows * skew.hot_share)))

    def draw(self) -> int:
        if self.hot_rows == 0:
            return self.rng.randint(1, self.rows)
        if self.rng.random() < self.skew.hot_reads:
            return self.rng.randint(1, self.hot_rows)
        return self.rng.randint(self.hot_rows + 1, self.rows)


class _Busy:
    pauses = False

    def keying_time(self, name: str) -> float:
        return 0.0

    def think_time(self, name: str) -> float:
        return 0.0

    def next(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def batch(self, size: int) -> list[tuple[Any, Any]]:
        return [self.next() for _ in range(size)]


class RandomEmulator(_Busy):
    """One terminal's own random stream, seeded so a run can be repeated."""

    headline = ReadRow.name

    def __init__(self, settings: IoRunSettings, index: int, dialect: Dialect) -> None:
        self.drawer = RowDrawer(settings.rows, settings.skew, random.Random(f"{settings.seed}/terminal/{index}"))
        self.transaction = ReadRow(dialect)

    def next(self) -> tuple[ReadRow, int]:
        return self.transaction, self.drawer.draw()


class ScanEmulator(_Busy):
    headline = ScanTable.name

    def __init__(self, settings: IoRunSettings, index: int, dialect: Dialect) -> None:
        self.transaction = ScanTable(dialect, settings.cold_files)

    def next(self) -> tuple[ScanTable, None]:
        return self.transaction, None
