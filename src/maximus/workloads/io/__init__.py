"""Storage-bound micro-benchmarks over one table of fixed-width rows (issue #43): ``io-random`` reads single rows by
primary key at random, ``io-scan`` scans the whole table. Both build the same database (its size and row width
choose it), and each declares the fio job that asks the same of the device (``device_job``)."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Mapping, TypeVar

from maximus.engines.base import Dialect, Engine, Session
from maximus.errors import UserError
from maximus.system.memory import drop_cached
from maximus.records import DeviceJob, StorageAccess
from maximus.workloads.base import (CheckResult, DatabaseInfo, Headline, LoadResult, Presentation, Progress,
                                    Workload)
from maximus.workloads.io import consistency, loader
from maximus.workloads.io.emulator import IoRunSettings, RandomEmulator, ScanEmulator
from maximus.workloads.io.loader import IoBuild
from maximus.workloads.io.settings import (COLD, RANDOM_OPTIONS, SCAN_OPTIONS, RandomSettings,
                                           ScanSettings, Skew, TableSettings, parse_settings)
from maximus.workloads.io.transactions import ReadRow, ScanTable

CACHED_BELOW_MB = 64  # a table smaller than this fits in almost any cache in the way
FIO_SECONDS, FIO_SECONDS_CACHED = 10.0, 1.0  # fio's job beside a run; a table likely cached needs no more than a token


def fio_seconds(table_mb: int) -> float:
    """How long fio measures the device beside a run on a table of ``table_mb``: a cached table's run measures memory,
    whatever fio says, so its job is a token second."""
    return FIO_SECONDS if table_mb >= CACHED_BELOW_MB else FIO_SECONDS_CACHED
SCAN_BLOCK_BYTES = 128 << 10  # what a sequential scan asks of the device at a time, read-ahead included

Chosen = TypeVar("Chosen", bound=TableSettings)


class _IoWorkload(Workload, Generic[Chosen]):
    """What both io workloads share: the table, its build, its check and the cache warning."""

    kind: ClassVar[type[TableSettings]]
    setting_names: ClassVar[tuple[str, ...]]

    def settings(self, given: Mapping[str, Any]) -> Chosen:
        return parse_settings(self.kind, self.name, given)  # type: ignore[return-value]

    def scale(self, settings: Chosen) -> int:
        return settings.table_mb

    def database_name(self, settings: Chosen) -> str:
        """``io-1024mb``, or ``io-1024mb-100b`` with other rows than the default's: the same for both workloads."""
        rows = "" if settings.row_bytes == TableSettings.row_bytes else f"-{settings.row_bytes}b"
        return f"io-{settings.table_mb}mb{rows}"

    def load(self, engine: Engine, settings: Chosen, seed: int, progress: Progress) -> LoadResult:
        return loader.load(engine, settings, seed, progress)

    def database_info(self, session: Session, dialect: Dialect) -> DatabaseInfo | None:
        return loader.read_info(session)

    def expected_rows(self, settings: Chosen) -> Mapping[str, int]:
        return loader.expected_rows(settings)

    def mark_used(self, session: Session) -> None:
        loader.mark_used(session)

    def recorded_inputs(self, info: DatabaseInfo, run_settings: IoRunSettings) -> Mapping[str, Any]:
        """The table as built: its rows, and ``table_bytes``, its size on disk as the engine counts it, which is
        what one scan reads (MB/s = scans/s x table_bytes), kept with the run for the read side."""
        built: IoBuild = info.inputs
        return {"rows": built.rows, "row_bytes": built.row_bytes, "table_bytes": built.table_bytes}

    def write_transactions(self) -> set[str]:
        return set()

    def check(self, session: Session, fresh: bool, dialect: Dialect) -> list[CheckResult]:
        """The rows the build recorded writing; without that record nothing can be checked."""
        info = loader.read_info(session)
        return consistency.no_build() if info is None else consistency.check(session, info.inputs)

    def warnings(self, settings: Chosen, terminals: int) -> list[str]:
        if not self._cached(settings):
            return []
        return [f"a {settings.table_mb} MiB table is likely cached (below {CACHED_BELOW_MB} MiB): the run measures "
                "memory, not storage"]

    def _table(self, settings: Chosen) -> str:
        return f"{settings.rows:,} rows of {settings.row_bytes} bytes"

    def _cached(self, settings: Chosen) -> bool:
        """Whether the table is likely served from a cache: small, and not scanned with cold caches."""
        return settings.table_mb < CACHED_BELOW_MB and not _cold(settings)

    def _conformance(self, settings: Chosen, measures: str) -> str:
        if self._cached(settings):
            return f"{measures}; a table this small is likely cached, so the run measures memory, not storage."
        if _cold(settings):
            return (f"{measures}; each scan began with the OS page cache of the database's files dropped, not the "
                    "engine's own buffer cache (keep it small for a scan the device serves).")
        return (f"{measures}; whether the device or a cache served the reads depends on the caches in the way "
                "(the engine's buffer cache, the OS's page cache).")


class IoRandom(_IoWorkload[RandomSettings]):
    name = "io-random"
    kind = RandomSettings
    headline = Headline("reads_per_s", "reads/s", "rows read by primary key per second", ReadRow.name,
                        "committed_reads_per_s", "committed reads/s", "rows read by primary key per second",
                        "Reads", per_seconds=1.0)
    reported_transactions = (ReadRow.name,)
    setting_names = tuple(RandomSettings.__dataclass_fields__)
    options = RANDOM_OPTIONS

    def presentation(self, settings: RandomSettings, terminals: int | None = None) -> Presentation:
        return Presentation(self.headline, "io-random (single-row reads)", not self._cached(settings),
                            f"{settings.table_mb:,} MiB table", f"{settings.table_mb} MiB",
                            f"{self._table(settings)}, {settings.skew} reads",
                            self._conformance(settings, "Random single-row reads by primary key, one page each"),
                            {ReadRow.name: "Row read"}, {})

    def run_settings(self, settings: RandomSettings, seed: int, info: DatabaseInfo,
                     server_side: bool) -> IoRunSettings:
        """The rows the build recorded: what the draws must stay within."""
        return IoRunSettings(info.inputs.rows, settings.drawn, seed, one_call=True)

    def transactions(self, dialect: Dialect, run_settings: IoRunSettings | None = None) -> dict[str, Any]:
        return {ReadRow.name: ReadRow(dialect)}

    def emulator(self, run_settings: IoRunSettings, terminal: int, dialect: Dialect) -> RandomEmulator:
        return RandomEmulator(run_settings, terminal, dialect)

    def device_job(self, settings: RandomSettings, terminals: int, access: StorageAccess, data_bytes: int,
                   info: DatabaseInfo | None = None) -> DeviceJob:
        """Each client reads one page at a time, synchronously: N clients are N jobs of one page per read."""
        return DeviceJob("randread", block_bytes=access.page_bytes, jobs=terminals, file_bytes=data_bytes,
                         direct=access.direct, mapped=access.mapped, runtime_s=fio_seconds(settings.table_mb),
                         compared_as="operations")


class IoScan(_IoWorkload[ScanSettings]):
    name = "io-scan"
    kind = ScanSettings
    # Per minute: a scan of a benchmark's table takes seconds, and the figure is truncated to an integer
    headline = Headline("scans_per_min", "scans/min", "full scans of the table per minute", ScanTable.name,
                        "committed_scans_per_min", "committed scans/min", "full scans of the table per minute",
                        "Scans", per_seconds=60.0)
    reported_transactions = (ScanTable.name,)
    setting_names = tuple(ScanSettings.__dataclass_fields__)
    options = SCAN_OPTIONS

    def presentation(self, settings: ScanSettings, terminals: int | None = None) -> Presentation:
        caches = f", {settings.caches} caches"
        return Presentation(self.headline, "io-scan (full table scans)", not self._cached(settings),
                            f"{settings.table_mb:,} MiB table{caches}", f"{settings.table_mb} MiB{caches}",
                            f"{self._table(settings)}, {settings.table_bytes:,} bytes of rows per scan",
                            self._conformance(settings, "Full scans of the table, every row read; MB/s is "
                                              "scans/s times the table's bytes on disk (the run's table_bytes)"),
                            {ScanTable.name: "Full scan"}, {})

    def run_settings(self, settings: ScanSettings, seed: int, info: DatabaseInfo, server_side: bool) -> IoRunSettings:
        return IoRunSettings(info.inputs.rows, Skew(), seed, cold_files=_cold_files(info) if _cold(settings) else None)

    def transactions(self, dialect: Dialect, run_settings: IoRunSettings | None = None) -> dict[str, Any]:
        return {ScanTable.name: ScanTable(dialect)}

    def emulator(self, run_settings: IoRunSettings, terminal: int, dialect: Dialect) -> ScanEmulator:
        return ScanEmulator(run_settings, terminal, dialect)

    def device_job(self, settings: ScanSettings, terminals: int, access: StorageAccess, data_bytes: int,
                   info: DatabaseInfo | None = None) -> DeviceJob:
        """Each client reads the whole data sequentially, in large requests (read-ahead's, or a page if larger); a
        completion is one scan, which reads the table as the build measured it on disk. Not the database's bytes:
        PostgreSQL's also hold the primary-key index and the catalogues, about a tenth more, which no scan reads, and
        which would make the device look as if it read less than the scans asked for. Without the build's record
        (only whether there is a job is asked) the database's bytes stand in."""
        table_bytes = info.inputs.table_bytes if info is not None else data_bytes
        return DeviceJob("read", block_bytes=max(SCAN_BLOCK_BYTES, access.page_bytes), jobs=terminals,
                         file_bytes=data_bytes, direct=access.direct, mapped=access.mapped,
                         runtime_s=fio_seconds(settings.table_mb), compared_as="bytes",
                         bytes_per_completion=table_bytes)


def _cold(settings: TableSettings) -> bool:
    return isinstance(settings, ScanSettings) and settings.caches == COLD


def _cold_files(info: DatabaseInfo) -> str:
    """The database's files whose cache each cold scan drops: only where this process may read every one of them
    (a server's data directory another user owns may be closed to it), else one line saying so. They are dropped here
    once: the first scan starts as cold as the others."""
    if info.files is None or not info.files.exists():
        raise UserError("io-scan --caches cold drops the OS page cache of the database's files, which are not on this "
                        f"machine ({info.files or 'no path known'}): use --caches warm")
    refused = drop_cached(info.files)
    if refused:
        raise UserError(f"io-scan --caches cold: this user may not read {len(refused)} of the database's files "
                        f"(first {refused[0]}), so their cache cannot be dropped: run as their owner or root, or use "
                        "--caches warm")
    return str(info.files)


__all__ = ["IoRandom", "IoScan", "RandomSettings", "ScanSettings"]
