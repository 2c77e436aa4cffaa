"""Per-run figures from the monitor's raw samples: CPU, disk, waits, TPS per CPU (cross-checks: ``crosschecks``).

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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from maximus.analysis.crosschecks import CrossCheck, cross_checks
from maximus.analysis.series import (EDGE_SLACK_S, OS_SOURCES, Change, Series, change, edges, find, one_series,
                                     series_of)
from maximus.client_hosts import HOST_CPU_SECONDS
from maximus.records import TxnSample, Window
from maximus.records import MetricSample
from maximus.samples import Samples

if TYPE_CHECKING:
    from maximus.analysis.metrics import RunFigures

TOP_WAITS = 5
BUSY_CLIENT_PROCESS = 0.9  # a client process busy 90 % of the time is not waiting for the server
SATURATED_IDLE_PERCENT = 10.0


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


def cpu_figures(all_series: Sequence[Series], window: Window, name: str = "cpu_seconds_total",
                **labels: str) -> CpuFigures | None:
    """The machine's CPU over ``window`` from ``name``'s modes (a client host's: ``HOST_CPU_SECONDS`` of its group)."""
    modes = ("user", "nice", "system", "irq", "softirq", "iowait", "idle", "steal")
    found = {m: change(one_series(all_series, name, mode=m, **labels), window) for m in modes}
    changes = {mode: found_change for mode, found_change in found.items() if found_change is not None}
    if len(changes) < len(modes):
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
    read_calls_per_s: float | None = None  # read system calls a second; None where not sampled (before, or no I/O)

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
        calls = change(one_series(all_series, "process_read_calls_total", group=name), window)
        figures[name] = GroupFigures(name, user.per_second, system.per_second, int(alive or 0),
                                     calls.per_second if calls else None)
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
    series = one_series(all_series, "disk_reads_total", role="data")
    if reads is None or writes is None or busy is None or read_bytes is None or written_bytes is None or not series:
        return None
    device = series.labels.get("device", "")
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


def reads_per_s(events: Sequence[WaitEvent], window: Window, role: str) -> float | None:
    """How many waits of the events that play ``role`` the engine counted a second in the window (its data file
    reads: PostgreSQL's blks_read, InnoDB's file reads); None when it counts none."""
    chosen = [e for e in events if e.role == role]
    seconds = window.end - window.start
    return sum(e.waits for e in chosen) / seconds if chosen and seconds > 0 else None


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
    data_reads_per_s: float | None = None  # the engine's own count of the reads it made from its data files
    buffer_hit_ratio: float | None = None
    tps_per_cpu_second: float | None = None
    engine: tuple[EngineStatistic, ...] = ()
    sampling_cpu_seconds: float | None = None
    hosts_cpu: Mapping[str, CpuFigures] = field(default_factory=dict)  # each client host's machine, by its group

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
        data_reads_per_s=reads_per_s(events, window, "data_read"),
        buffer_hit_ratio=buffer_hit_ratio(all_series, window),
        tps_per_cpu_second=transactions_per_s / cpu.busy_cpus if cpu and cpu.busy_cpus > 0 else None,
        engine=tuple(engine_statistics(all_series, window)),
        sampling_cpu_seconds=sum(s.points[-1][1] for s in sampling) if sampling else None,
        hosts_cpu=hosts_cpu_figures(all_series, window))


def hosts_cpu_figures(all_series: Sequence[Series], window: Window) -> dict[str, CpuFigures]:
    """Each client host's machine CPU over the window, by the host's group (``client_hosts.host_group``); none for a
    run on one machine, or stored before the hosts' machines were sampled."""
    groups = sorted({s.labels.get("group", "") for s in find(all_series, HOST_CPU_SECONDS)})
    found = {group: cpu_figures(all_series, window, HOST_CPU_SECONDS, group=group) for group in groups}
    return {group: figures for group, figures in found.items() if figures is not None}


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


@dataclass(frozen=True)
class RunMonitoring:
    """What ``show`` prints about a run's monitoring: the derived figures and every cross-check."""

    figures: MonitoringFigures
    checks: tuple[CrossCheck, ...]
    embedded: bool  # the engine runs inside the client processes: no server CPU to tell apart


def analyse(samples: Sequence[MetricSample], transactions: Samples | Sequence[TxnSample], window: Window,
            writers: Iterable[str], transactions_per_s: float, embedded: bool) -> RunMonitoring:
    return RunMonitoring(monitoring_figures(samples, window, transactions_per_s),
                         tuple(cross_checks(samples, transactions, window, writers, embedded)), embedded)


@dataclass(frozen=True)
class RunColumn:
    """One run as a column of the classic tuning articles' run table: its label (the terminal count) and its figures."""

    label: str
    figures: RunFigures
    monitoring: MonitoringFigures
