"""Cross-checks of a run: two independent counts of the same thing (the driver's commits and the database's
counter, the database's reads and writes and the data device's), each failing beyond its tolerance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from maximus.analysis.series import OS_SOURCES, Series, change, edges, find, label, one_series, series_of
from maximus.records import DEFERRED_PREFIX, Outcome, TxnSample, Window
from maximus.records import MetricSample
from maximus.samples import Samples, samples_of


@dataclass(frozen=True)
class Tolerance:
    """How far two counts may differ before a cross-check fails.

    A counter of every transaction (``counts=all``, PostgreSQL's ``xact_commit``) also counts transactions
    the driver does not run as such, which may come on top:

    - psycopg prepares a statement after its fifth use; for one run outside a transaction block the
      preparation is a transaction of its own. Once per session and statement: the TPC-C workload
      runs at most five such statements per session (its functions; ``BEGIN`` in client mode).
    - After each ROLLBACK the driver sends, psycopg sends ``DEALLOCATE ALL`` (one more) and prepares
      its statements anew (up to five more). PostgreSQL counts such a rollback twice in server mode
      (the failed call, then the ROLLBACK outside a transaction) and once in client mode, where only
      ``BEGIN`` is prepared anew: three per counted rollback covers both.
    - Autovacuum's few transactions are within the relative tolerance.
    """

    commits_relative: float = 0.01
    commits_absolute: float = 2.0  # a counter may miss one commit (SQLite with exclusive locking), with slack
    extra_commits_per_session: float = 5.0
    extra_commits_per_rollback: float = 3.0
    io_relative: float = 0.10
    io_absolute_bytes: float = 1 << 20


@dataclass(frozen=True)
class CrossCheck:
    """Two independent counts of the same thing; ``passed`` is False beyond the tolerance."""

    name: str
    database: float
    reference: float
    passed: bool
    detail: str  # both numbers and where they come from, in words
    hint: str  # what a mismatch may mean, and what to look at

    def warning(self) -> str:
        return f"cross-check of {self.name} failed: {self.detail}; {self.hint}"


def cross_checks(samples: Sequence[MetricSample], transactions: Samples | Sequence[TxnSample], window: Window,
                 writers: Iterable[str], embedded: bool, tolerance: Tolerance = Tolerance()) -> list[CrossCheck]:
    """The checks the run's samples allow: commits over the whole run, reads and writes over the window.

    ``writers`` are the sample names of transactions that commit changes (deferred ones by the name
    their completion is recorded under, e.g. ``deferred_delivery``). ``embedded``: the engine runs
    inside the client processes, so their I/O is the database's.
    """
    all_series = series_of(samples)
    checks = [commit_check(all_series, transactions, set(writers), tolerance),
              read_check(all_series, window, "client" if embedded else "server", tolerance),
              write_check(all_series, window, tolerance)]
    return [c for c in checks if c is not None]


def commit_check(all_series: Sequence[Series], transactions: Samples | Sequence[TxnSample], writers: set[str],
                 tolerance: Tolerance) -> CrossCheck | None:
    """Driver-counted committed transactions vs the database's own commit counter, whole run.

    With a counter of write transactions (``counts=writes``) the driver's committed ``writers`` are
    compared; with a counter of every transaction (``counts=all``) every committed transaction the
    database ran (deferred ones by their completion), and the database may count the extra
    transactions ``Tolerance`` describes. Needs a counter read before the first transaction started
    and after the last one ended.
    """
    counter = (one_series(all_series, "commits_total", counts="writes")
               or one_series(all_series, "commits_total", counts="all"))
    if counter is None or not len(transactions):
        return None
    ran = samples_of(transactions)
    (t0, v0), (t1, v1) = counter.points[0], counter.points[-1]
    if t0 > ran.start.min() or t1 < ran.end.max():
        return None
    every = counter.labels.get("counts") == "all"
    counted = database_transactions(ran.names, writers) if every else writers
    driver = int(np.count_nonzero(ran.with_outcome(Outcome.COMMITTED) & ran.named(counted)))
    database = v1 - v0
    fewer = max(tolerance.commits_absolute, tolerance.commits_relative * driver)
    more = fewer + (_extra_commits(all_series, tolerance) if every else 0.0)
    what = "committed transactions" if every else "committed write transactions"
    allowed = f"{fewer:,.0f}" if more == fewer else f"{fewer:,.0f} fewer to {more:,.0f} more"
    detail = (f"the driver counted {driver:,} {what}, the database's own counter "
              f"({counter.source} {counter.labels.get('from', counter.name)}) {database:,.0f} (allowed difference "
              f"{allowed})")
    hint = "transactions the driver took as committed may not be, or the database counts other writers"
    return CrossCheck("commits", database, driver, -fewer <= database - driver <= more, detail, hint)


def database_transactions(names: Iterable[str], writers: Iterable[str]) -> set[str]:
    """The sample names that are transactions run in the database: all but the acknowledgements of
    deferred transactions (``delivery``), whose work is recorded as ``deferred_<name>``."""
    acknowledged = {w.removeprefix(DEFERRED_PREFIX) for w in writers if w.startswith(DEFERRED_PREFIX)}
    return set(names) - acknowledged


def _extra_commits(all_series: Sequence[Series], tolerance: Tolerance) -> float:
    """What a counter of every transaction may count beyond the driver's (see ``Tolerance``), whole run."""
    sessions = one_series(all_series, "client_backends")
    rollbacks = one_series(all_series, "rollbacks_total")
    most = max((v for _, v in sessions.points), default=0.0) if sessions else 0.0
    rolled = max(0.0, rollbacks.points[-1][1] - rollbacks.points[0][1]) if rollbacks else 0.0
    return tolerance.extra_commits_per_session * most + tolerance.extra_commits_per_rollback * rolled


def read_check(all_series: Sequence[Series], window: Window, group: str, tolerance: Tolerance) -> CrossCheck | None:
    """The database processes' reads from storage must show on the data device (which may serve more).

    ``group`` is where the database runs: ``server``, or ``client`` for an embedded engine.
    """
    database = change(one_series(all_series, "process_read_bytes_total", group=group), window)
    device = change(one_series(all_series, "disk_read_bytes_total", role="data"), window)
    if database is None or device is None:
        return None
    passed = database.amount <= device.amount * (1 + tolerance.io_relative) + tolerance.io_absolute_bytes
    name = label(one_series(all_series, "disk_read_bytes_total", role="data"), "device")
    detail = (f"the {group} processes read {database.amount / 1e6:,.1f} MB from storage in the window, the data "
              f"device {name} {device.amount / 1e6:,.1f} MB")
    hint = "is the data directory on another device, or is its I/O invisible to /proc/diskstats?"
    return CrossCheck("reads", database.amount, device.amount, passed, detail, hint)


def write_check(all_series: Sequence[Series], window: Window, tolerance: Tolerance) -> CrossCheck | None:
    """What the database's files grew by must have reached the data device, or still be dirty in memory.

    A lower bound, on purpose: the kernel's per-process ``write_bytes`` would be the natural
    database-side figure, but with large page-cache folios it counts a whole folio for every 4 KiB
    rewritten (hundreds of times the real writes), so it cannot be checked against a device.
    """
    files = [s for s in find(all_series, "file_bytes") if s.source not in OS_SOURCES]
    grown = [_gauge_growth(s, window) for s in files]
    device = change(one_series(all_series, "disk_written_bytes_total", role="data"), window)
    dirty = [_gauge_growth(one_series(all_series, "memory_bytes", kind=k), window) for k in ("dirty", "writeback")]
    growth = [g for g in grown if g is not None]
    pending = [p for p in dirty if p is not None]
    if not files or len(growth) < len(grown) or device is None or len(pending) < len(dirty):
        return None
    database = sum(max(0.0, g) for g in growth)
    reference = device.amount + max(0.0, sum(pending))
    passed = database <= reference * (1 + tolerance.io_relative) + tolerance.io_absolute_bytes
    name = label(one_series(all_series, "disk_written_bytes_total", role="data"), "device")
    detail = (f"the database's files grew by {database / 1e6:,.1f} MB in the window, the data device {name} wrote "
              f"{device.amount / 1e6:,.1f} MB and the page cache holds {max(0.0, sum(pending)) / 1e6:,.1f} MB more "
              "dirty data than at the start")
    hint = "is the data directory on another device, or is its I/O invisible to /proc/diskstats?"
    return CrossCheck("writes", database, reference, passed, detail, hint)


def _gauge_growth(series: Series | None, window: Window) -> float | None:
    bounds = edges(series, window) if series else None
    return None if bounds is None else bounds[1][1] - bounds[0][1]
