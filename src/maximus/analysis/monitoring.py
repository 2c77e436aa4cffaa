"""Per-run figures from the monitor's raw samples: CPU, disk, waits, TPS per CPU, and cross-checks.

Pure functions over stored ``MetricSample`` lists (see ``maximus.samplers`` for what each sampler
reads). Counters are stored cumulative; a figure over the measured window is the change between the
reading nearest each edge of the window, divided by the time between those readings. A figure whose
samples are missing is ``None``, never a guess: the report prints "-" for it.

The names used here are the samplers' documented names: the OS sampler's ``cpu_seconds_total``,
``disk_*{role=data}``, ``process_*{group}`` and ``memory_bytes``; and, from any engine sampler,
``commits_total{counts=writes}`` (committed write transactions) or ``commits_total{counts=all}`` (every
transaction the database committed, with ``rollbacks_total`` and the gauge ``client_backends``),
``file_bytes{file}`` (sizes of the database's files), ``wait_seconds_total``/``waits_total{event, role}``
(timed waits), ``buffer_hits_total``/``buffer_misses_total``, and sampled wait events
(``activity_snapshots_total``, ``active_backend_samples_total``, ``wait_samples_total{event}``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from maximus.records import Outcome, TxnSample, Window
from maximus.samplers.base import MetricSample

if TYPE_CHECKING:
    from maximus.analysis.metrics import RunFigures

EDGE_SLACK_S = 0.25  # a reading this late still counts as taken at the window's edge (thread wake-up jitter)
TOP_WAITS = 5
DEFERRED_PREFIX = "deferred_"  # a deferred transaction's completion is recorded as deferred_<name> (the driver's)
BUSY_CLIENT_PROCESS = 0.9  # a client process busy 90 % of the time is not waiting for the server
SATURATED_IDLE_PERCENT = 10.0
OS_SOURCES = ("os", "monitor")


@dataclass(frozen=True)
class Series:
    """The readings of one counter or gauge: same source, name and labels, in time order."""

    source: str
    name: str
    unit: str
    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]

    @property
    def is_counter(self) -> bool:
        return self.name.endswith("_total")


@dataclass(frozen=True)
class Change:
    seconds: float
    amount: float

    @property
    def per_second(self) -> float:
        return self.amount / self.seconds


def series_of(samples: Iterable[MetricSample]) -> list[Series]:
    grouped: dict[tuple[str, str, str], list[MetricSample]] = defaultdict(list)
    for sample in samples:
        grouped[(sample.source, sample.name, sample.labels_text())].append(sample)
    return [Series(source, name, group[0].unit, json.loads(labels), tuple(sorted((s.time, s.value) for s in group)))
            for (source, name, labels), group in grouped.items()]


def find(all_series: Sequence[Series], name: str, **labels: str) -> list[Series]:
    """The series called ``name`` whose labels include ``labels``."""
    return [s for s in all_series if s.name == name and labels.items() <= s.labels.items()]


def edges(series: Series, window: Window) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The readings nearest the window's start and end; None when fewer than two cover it."""
    before = [p for p in series.points if p[0] <= window.start + EDGE_SLACK_S]
    until = [p for p in series.points if p[0] <= window.end + EDGE_SLACK_S]
    first = before[-1] if before else series.points[0]
    if not until or until[-1][0] <= first[0]:
        return None
    return first, until[-1]


def change(series: Series | None, window: Window) -> Change | None:
    """A counter's increase over the window; None when not covered, or when it went backwards (a wrap)."""
    bounds = edges(series, window) if series else None
    if bounds is None or bounds[1][1] < bounds[0][1]:
        return None
    (t0, v0), (t1, v1) = bounds
    return Change(t1 - t0, v1 - v0)


def one_series(all_series: Sequence[Series], name: str, **labels: str) -> Series | None:
    """The first series called ``name`` with ``labels``, or None."""
    found = find(all_series, name, **labels)
    return found[0] if found else None


# --- CPU, process groups, disk -------------------------------------------------------------------


@dataclass(frozen=True)
class CpuFigures:
    """The whole machine's CPU over the window, as shares of all CPUs' time (percent)."""

    user: float  # user + nice
    system: float  # system + irq + softirq
    iowait: float
    idle: float
    steal: float  # taken by the hypervisor
    busy_cpus: float  # CPU-seconds per second spent in user and system modes


def cpu_figures(all_series: Sequence[Series], window: Window) -> CpuFigures | None:
    modes = ("user", "nice", "system", "irq", "softirq", "iowait", "idle", "steal")
    changes = {m: change(one_series(all_series, "cpu_seconds_total", mode=m), window) for m in modes}
    if any(c is None for c in changes.values()):
        return None
    total = sum(c.amount for c in changes.values())
    if total <= 0:
        return None
    share = lambda *names: 100 * sum(changes[n].amount for n in names) / total  # noqa: E731
    busy = sum(changes[n].amount for n in ("user", "nice", "system", "irq", "softirq"))
    return CpuFigures(share("user", "nice"), share("system", "irq", "softirq"), share("iowait"), share("idle"),
                      share("steal"), busy / changes["user"].seconds)


@dataclass(frozen=True)
class GroupFigures:
    """One process group's CPU over the window, in CPUs (CPU-seconds per second)."""

    name: str
    user_cpus: float
    system_cpus: float
    processes: int  # the most alive at any reading in the window

    @property
    def cpus(self) -> float:
        return self.user_cpus + self.system_cpus


def group_figures(all_series: Sequence[Series], window: Window) -> dict[str, GroupFigures]:
    figures = {}
    for name in sorted({s.labels.get("group", "") for s in find(all_series, "process_cpu_seconds_total")}):
        user = change(one_series(all_series, "process_cpu_seconds_total", group=name, mode="user"), window)
        system = change(one_series(all_series, "process_cpu_seconds_total", group=name, mode="system"), window)
        if user is None or system is None:
            continue
        alive = _most(one_series(all_series, "processes", group=name), window)
        figures[name] = GroupFigures(name, user.per_second, system.per_second, int(alive or 0))
    return figures


def _most(series: Series | None, window: Window) -> float | None:
    """A gauge's highest reading in the window."""
    inside = [v for t, v in series.points if window.start - EDGE_SLACK_S <= t <= window.end + EDGE_SLACK_S] \
        if series else []
    return max(inside, default=None)


@dataclass(frozen=True)
class DiskFigures:
    """The data directory's device over the window (iostat's r/s, w/s, rMB/s, wMB/s, r_await, w_await)."""

    device: str
    reads_per_s: float
    writes_per_s: float
    read_mb_per_s: float  # MB = 10**6 bytes
    written_mb_per_s: float
    read_wait_ms: float | None  # average time per read, queueing included; None without reads
    write_wait_ms: float | None
    busy_percent: float

    @property
    def io_mb_per_s(self) -> float:
        return self.read_mb_per_s + self.written_mb_per_s


def _average_ms(seconds: Change | None, count: Change | None) -> float | None:
    if seconds is None or count is None or count.amount <= 0:
        return None
    return 1000 * seconds.amount / count.amount


def disk_figures(all_series: Sequence[Series], window: Window) -> DiskFigures | None:
    get = lambda name: change(one_series(all_series, name, role="data"), window)  # noqa: E731
    reads, writes, busy = get("disk_reads_total"), get("disk_writes_total"), get("disk_busy_seconds_total")
    read_bytes, written_bytes = get("disk_read_bytes_total"), get("disk_written_bytes_total")
    if None in (reads, writes, busy, read_bytes, written_bytes):
        return None
    device = one_series(all_series, "disk_reads_total", role="data").labels.get("device", "")
    return DiskFigures(device, reads.per_second, writes.per_second, read_bytes.per_second / 1e6,
                       written_bytes.per_second / 1e6, _average_ms(get("disk_read_seconds_total"), reads),
                       _average_ms(get("disk_write_seconds_total"), writes), 100 * busy.per_second)


# --- what engines report: waits, buffer cache, their own counters -----------------------------------


@dataclass(frozen=True)
class WaitEvent:
    """A wait event over the window: timed (``waits`` and ``seconds`` as the engine counted them) or
    sampled (``share`` of the sessions' sampled active time, ``seconds`` estimated from it, no ``waits``)."""

    event: str
    role: str  # log_sync, data_read or "" (what the event means across engines)
    waits: float
    seconds: float
    share: float | None = None  # sampled events only

    @property
    def average_ms(self) -> float | None:
        return 1000 * self.seconds / self.waits if self.waits > 0 else None


def wait_events(all_series: Sequence[Series], window: Window) -> list[WaitEvent]:
    """Every wait event with its waits and time in the window, most time first."""
    events = []
    for timed in find(all_series, "wait_seconds_total"):
        event = timed.labels.get("event", "")
        seconds, waits = change(timed, window), change(one_series(all_series, "waits_total", event=event), window)
        if seconds is not None and waits is not None:
            events.append(WaitEvent(event, timed.labels.get("role", ""), waits.amount, seconds.amount))
    return sorted(events, key=lambda e: -e.seconds)


def sampled_wait_events(all_series: Sequence[Series], window: Window) -> list[WaitEvent]:
    """Wait events sampled from the engine's sessions, largest share of their active time first.

    Each snapshot sees every active session once; a session seen waiting in an event stands for one
    snapshot interval of waiting. So an event's share is its samples over all active-session samples,
    and its seconds are its samples times the interval (session-seconds, an estimate).
    """
    snapshots = change(one_series(all_series, "activity_snapshots_total"), window)
    active = change(one_series(all_series, "active_backend_samples_total"), window)
    if snapshots is None or active is None or snapshots.amount <= 0 or active.amount <= 0:
        return []
    interval_s = snapshots.seconds / snapshots.amount
    events = []
    for series in find(all_series, "wait_samples_total"):
        seen = _change_from_zero(series, window)
        if seen:
            events.append(WaitEvent(series.labels.get("event", ""), "", 0.0, seen * interval_s, seen / active.amount))
    return sorted(events, key=lambda e: -e.seconds)


def _change_from_zero(series: Series, window: Window) -> float | None:
    """A counter's increase over the window, for a counter that starts at 0 and first appears once it
    has counted something: a series whose first reading is after the window's start was 0 there."""
    if series.points[0][0] <= window.start + EDGE_SLACK_S:
        moved = change(series, window)
        return moved.amount if moved else None
    until = [v for t, v in series.points if t <= window.end + EDGE_SLACK_S]
    return until[-1] if until else None


def average_wait_ms(events: Sequence[WaitEvent], role: str) -> float | None:
    """The average wait of the events that play ``role``; None when the engine reports none."""
    chosen = [e for e in events if e.role == role]
    waits = sum(e.waits for e in chosen)
    return 1000 * sum(e.seconds for e in chosen) / waits if waits > 0 else None


def buffer_hit_ratio(all_series: Sequence[Series], window: Window) -> float | None:
    hits = change(one_series(all_series, "buffer_hits_total"), window)
    misses = change(one_series(all_series, "buffer_misses_total"), window)
    if hits is None or misses is None or hits.amount + misses.amount <= 0:
        return None
    return hits.amount / (hits.amount + misses.amount)


@dataclass(frozen=True)
class EngineStatistic:
    """An engine sampler's own counter (its increase and rate) or gauge (its highest reading in the window)."""

    source: str
    name: str
    labels: Mapping[str, str]
    unit: str
    value: float
    per_second: float | None  # counters only


def engine_statistics(all_series: Sequence[Series], window: Window) -> list[EngineStatistic]:
    statistics = []
    own = (s for s in all_series if s.source not in OS_SOURCES and "group" not in s.labels  # groups: process CPU
           and s.name != "sampling_cpu_seconds_total")  # part of the cost of monitoring
    for s in sorted(own, key=lambda s: (s.source, s.name)):
        bounds = edges(s, window)
        if bounds is None:
            continue
        if s.is_counter:
            moved = change(s, window)
            if moved is not None:
                statistics.append(EngineStatistic(s.source, s.name, s.labels, s.unit, moved.amount, moved.per_second))
        else:  # the highest, not the last: the last reading comes after the terminals have gone
            highest = _most(s, window)
            if highest is not None:
                statistics.append(EngineStatistic(s.source, s.name, s.labels, s.unit, highest, None))
    return statistics


# --- the whole picture ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonitoringFigures:
    """Every derived figure of one run; ``None`` where the run's samplers did not provide it."""

    monitored: bool
    sources: tuple[str, ...]
    cpu: CpuFigures | None = None
    groups: Mapping[str, GroupFigures] = field(default_factory=dict)
    disk: DiskFigures | None = None
    context_switches_per_s: float | None = None
    waits: tuple[WaitEvent, ...] = ()  # the top 5: sampled by share when the engine samples them, else timed by time
    log_sync_wait_ms: float | None = None
    data_read_wait_ms: float | None = None
    buffer_hit_ratio: float | None = None
    tps_per_cpu_second: float | None = None
    engine: tuple[EngineStatistic, ...] = ()
    sampling_cpu_seconds: float | None = None

    @property
    def client_bound(self) -> str | None:
        return client_bound(self.groups, self.cpu)


def monitoring_figures(samples: Sequence[MetricSample], window: Window, transactions_per_s: float
                       ) -> MonitoringFigures:
    """All derived figures over the measured window; ``transactions_per_s`` is the run's TPM / 60."""
    if not samples:
        return MonitoringFigures(monitored=False, sources=())
    all_series = series_of(samples)
    cpu = cpu_figures(all_series, window)
    events = wait_events(all_series, window)
    top = sampled_wait_events(all_series, window) or events
    switches = change(one_series(all_series, "context_switches_total"), window)
    sampling = find(all_series, "sampling_cpu_seconds_total")  # the monitor's, and samplers' own threads'
    return MonitoringFigures(
        monitored=True, sources=tuple(sorted({s.source for s in all_series})), cpu=cpu,
        groups=group_figures(all_series, window), disk=disk_figures(all_series, window),
        context_switches_per_s=switches.per_second if switches else None, waits=tuple(top[:TOP_WAITS]),
        log_sync_wait_ms=average_wait_ms(events, "log_sync"), data_read_wait_ms=average_wait_ms(events, "data_read"),
        buffer_hit_ratio=buffer_hit_ratio(all_series, window),
        tps_per_cpu_second=transactions_per_s / cpu.busy_cpus if cpu and cpu.busy_cpus > 0 else None,
        engine=tuple(engine_statistics(all_series, window)),
        sampling_cpu_seconds=sum(s.points[-1][1] for s in sampling) if sampling else None)


def client_bound(groups: Mapping[str, GroupFigures], cpu: CpuFigures | None) -> str | None:
    """Why the client, not the server, limits throughput; None when it does not (or when embedded).

    Only a server engine can be client-bound: an embedded engine's work is the client's own.
    """
    server, client = groups.get("server"), groups.get("client")
    if server is None or client is None:
        return None
    if client.processes and client.cpus / client.processes >= BUSY_CLIENT_PROCESS:
        return (f"client-bound: Maximus's client processes were each busy {client.cpus / client.processes:.0%} of "
                "the time, so they hardly waited for the server; add terminals or client CPUs")
    own = client.cpus + (groups["driver"].cpus if "driver" in groups else 0.0)
    if cpu is not None and cpu.idle < SATURATED_IDLE_PERCENT and own > server.cpus:
        return (f"client-bound: the CPUs were saturated (idle {cpu.idle:.0f} %) and Maximus's own processes used "
                f"{own:.1f} CPUs, more than the server's {server.cpus:.1f}; run Maximus on another machine")
    return None


# --- cross-checks --------------------------------------------------------------------------------------


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


def cross_checks(samples: Sequence[MetricSample], transactions: Sequence[TxnSample], window: Window,
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


def commit_check(all_series: Sequence[Series], transactions: Sequence[TxnSample], writers: set[str],
                 tolerance: Tolerance) -> CrossCheck | None:
    """Driver-counted committed transactions vs the database's own commit counter, whole run.

    With a counter of write transactions (``counts=writes``) the driver's committed ``writers`` are
    compared; with a counter of every transaction (``counts=all``) every committed transaction the
    database ran (deferred ones by their completion), and the database may count the extra
    transactions ``Tolerance`` describes. Needs a counter read before the first transaction started
    and after the last one ended.
    """
    counter = one_series(all_series, "commits_total", counts="writes") or one_series(all_series, "commits_total", counts="all")
    if counter is None or not transactions:
        return None
    (t0, v0), (t1, v1) = counter.points[0], counter.points[-1]
    if t0 > min(t.start for t in transactions) or t1 < max(t.start + t.latency for t in transactions):
        return None
    every = counter.labels.get("counts") == "all"
    counted = database_transactions({t.transaction for t in transactions}, writers) if every else writers
    driver = sum(1 for t in transactions if t.outcome is Outcome.COMMITTED and t.transaction in counted)
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
    name = one_series(all_series, "disk_read_bytes_total", role="data").labels.get("device", "?")
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
    growth = [_gauge_growth(s, window) for s in files]
    device = change(one_series(all_series, "disk_written_bytes_total", role="data"), window)
    pending = [_gauge_growth(one_series(all_series, "memory_bytes", kind=k), window) for k in ("dirty", "writeback")]
    if not files or None in growth or device is None or None in pending:
        return None
    database = sum(max(0.0, g) for g in growth)
    reference = device.amount + max(0.0, sum(pending))
    passed = database <= reference * (1 + tolerance.io_relative) + tolerance.io_absolute_bytes
    name = one_series(all_series, "disk_written_bytes_total", role="data").labels.get("device", "?")
    detail = (f"the database's files grew by {database / 1e6:,.1f} MB in the window, the data device {name} wrote "
              f"{device.amount / 1e6:,.1f} MB and the page cache holds {max(0.0, sum(pending)) / 1e6:,.1f} MB more "
              "dirty data than at the start")
    hint = "is the data directory on another device, or is its I/O invisible to /proc/diskstats?"
    return CrossCheck("writes", database, reference, passed, detail, hint)


def _gauge_growth(series: Series | None, window: Window) -> float | None:
    bounds = edges(series, window) if series else None
    return None if bounds is None else bounds[1][1] - bounds[0][1]


def client_bound_warning(samples: Sequence[MetricSample], window: Window) -> str | None:
    """The client-bound verdict straight from the samples, for the run's warnings."""
    all_series = series_of(samples)
    return client_bound(group_figures(all_series, window), cpu_figures(all_series, window))


@dataclass(frozen=True)
class RunMonitoring:
    """What ``show`` prints about a run's monitoring: the derived figures and every cross-check."""

    figures: MonitoringFigures
    checks: tuple[CrossCheck, ...]
    embedded: bool  # the engine runs inside the client processes: no server CPU to tell apart


def analyse(samples: Sequence[MetricSample], transactions: Sequence[TxnSample], window: Window,
            writers: Iterable[str], transactions_per_s: float, embedded: bool) -> RunMonitoring:
    return RunMonitoring(monitoring_figures(samples, window, transactions_per_s),
                         tuple(cross_checks(samples, transactions, window, writers, embedded)), embedded)


@dataclass(frozen=True)
class RunColumn:
    """One run as a column of the seeds' run table: its label (the terminal count) and its figures."""

    label: str
    figures: RunFigures
    monitoring: MonitoringFigures
