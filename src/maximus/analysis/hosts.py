"""A run's client hosts judged (issue #45): a host whose clock is known too loosely to place its transactions in the
window, one whose terminals started after the others or ran at a lower priority, and one whose client had no CPU to
spare, each named in a warning of the run. Recomputed from what each host's record holds (``maximus.client_hosts``),
as every verdict is."""

from __future__ import annotations

from typing import Mapping, Sequence

from maximus.analysis.monitoring import SATURATED_IDLE_PERCENT, CpuFigures
from maximus.client_hosts import ClientHostRecord, host_group

# On one machine the offset's bound stays under a millisecond or two: beyond 5 ms, a host's transactions may sit
# that far from where the other hosts' are, which a percentile of milliseconds would feel
OFFSET_BOUND_LIMIT_S = 0.005
# The share of its CPUs a host's client may use and still be said to wait for the server, as a busy client process
# is on one machine (analysis.monitoring.BUSY_CLIENT_PROCESS)
CLIENT_BOUND_SHARE = 0.9


def host_warnings(hosts: Sequence[ClientHostRecord], machines: Mapping[str, CpuFigures] | None = None) -> list[str]:
    """What makes each host's share of the run less than it should be, a warning each, the host named. ``machines``:
    each host's machine CPU over the window, by its group (``MonitoringFigures.hosts_cpu``)."""
    machines = machines or {}
    return [warning for host in hosts
            for warning in (_clock(host), _late(host), _niceness(host), _client_bound(host),
                            _busy_machine(host, machines.get(host_group(host.host)))) if warning]


def _clock(host: ClientHostRecord) -> str | None:
    readings = [host.clock_before, *([host.clock_after] if host.clock_after else [])]
    bound = max(reading.bound_s for reading in readings)
    drift = abs(host.drift_s or 0.0)
    if bound <= OFFSET_BOUND_LIMIT_S and drift <= OFFSET_BOUND_LIMIT_S:
        return None
    return (f"{host.name}: its clock's offset to the coordinator's is known within ±{bound * 1000:.1f} ms and "
            f"drifted {drift * 1000:.1f} ms over the run, more than the {OFFSET_BOUND_LIMIT_S * 1000:g} ms allowed: "
            "its transactions may be placed that far off in the window; put it nearer the coordinator")


def _late(host: ClientHostRecord) -> str | None:
    if host.late_start_s <= 0:
        return None
    return (f"{host.name}: its terminals started {host.late_start_s:.2f} s after the agreed start, which reached it "
            "late, so its warm-up was that much shorter; a longer warm-up keeps the window whole")


def _niceness(host: ClientHostRecord) -> str | None:
    if host.niceness <= 0:
        return None
    return (f"{host.name}: its terminals ran at niceness {host.niceness} (Ray's for its workers), giving way to every "
            "other process of the host; run its Ray node as root, or start it with RAY_worker_niceness=0")


def _busy_machine(host: ClientHostRecord, machine: CpuFigures | None) -> str | None:
    """A host whose machine had no CPU to spare while its own client did not use its share: something else on the
    machine (the database, another node, another job) took the CPUs its terminals needed. A client-bound host is
    said so by ``_client_bound`` instead."""
    if machine is None or machine.idle >= SATURATED_IDLE_PERCENT or host.cpu_share > CLIENT_BOUND_SHARE:
        return None
    return (f"{host.name}: its machine was {100 - machine.idle:.0f} % busy (idle {machine.idle:.0f} %) while its "
            f"client used {host.cpu_share:.0%} of the {host.cpus:g} CPU(s) Ray gave it: other processes there took "
            "CPU its terminals needed; keep the host's machine for its client, or give its node fewer CPUs")


def _client_bound(host: ClientHostRecord) -> str | None:
    if host.cpu_share <= CLIENT_BOUND_SHARE:
        return None
    return (f"{host.name}: client-bound: its client used {host.cpu_share:.0%} of the {host.cpus:g} CPU(s) Ray gave "
            "it, so it hardly waited for the server; add client hosts, or CPUs to this one")
