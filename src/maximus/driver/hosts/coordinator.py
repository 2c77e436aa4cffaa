"""Drives a run's terminals from several client hosts, the nodes of a Ray cluster (issue #45), as one run.

1. One client actor per node (``cluster.placed_hosts``), each given the terminals of its own homes (``shares``).
2. Each host's clock against the coordinator's, by pings (``clock``), before the run and again after it (drift).
3. The start barrier: every host starts its workers, and waits once they are ready; when all are, the coordinator picks
   a start ``START_LEAD_S`` ahead on its wall clock, and each host starts its terminals at that moment on its own
   monotonic clock (``host.ClientHost.release``), so every sample of every host is in seconds from one origin, within
   the host's offset bound.
4. While they run: the hosts' records, live counts and their client processes' CPU stream back about twice a second
   (``streams``), the engine's watch is looked at about once a second (a fault stops every host), and Ctrl-C stops
   every host as it stops the terminals of one machine.
5. Their runs, with the records they streamed, merged (``merge``), and a record of each host
   (``maximus.client_hosts``).

The database's server runs where the coordinator does, and the hosts connect to it as the terminals of one machine
would; the coordinator's own monitor samples its machine, the server's.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from maximus.client_hosts import ClientHostRecord, host_group
from maximus.driver.hosts import cluster
from maximus.driver.hosts.assigned import AssignedHost, lost
from maximus.driver.hosts.clock import ClockSync, synchronise
from maximus.driver.hosts.cluster import PlacedHosts
from maximus.driver.hosts.host import HostRun, Place
from maximus.driver.hosts.merge import merged
from maximus.driver.hosts.shares import host_homes, host_terminals
from maximus.driver.hosts.streams import Streams
from maximus.driver.scheduler import DriveResult, DriveSpec, Observer, RunMonitor
from maximus.records import MetricSample, RunStatus
from maximus.workloads.base import Homes

START_LEAD_S = 0.25  # from the coordinator's pick of the start to the start: its release reaches every host meanwhile
TICK_S = 0.5  # the period of the streamed records and live counts
WATCH_EVERY_S = 1.0  # the engine's watch's period, as on one machine
TAKE_TIMEOUT_S = 1.0  # a host too busy to answer a tick is heard at a later one


class HostsMonitor(RunMonitor, Protocol):
    """The coordinator's monitor: what it samples on its own machine, and the hosts' readings kept beside them."""

    def keep(self, samples: Sequence[MetricSample]) -> None: ...


@dataclass(frozen=True)
class ClientHosts:
    """Where a run's terminals run: ``count`` nodes of the Ray cluster at ``address``, each with the terminals of
    its own ``homes`` (None: terminals without homes, dealt in turn)."""

    address: str
    count: int
    homes: Homes | None


@dataclass(frozen=True)
class HostsResult:
    result: DriveResult  # the hosts' runs merged: the run's
    hosts: tuple[ClientHostRecord, ...]  # in host order
    runs: tuple[DriveResult, ...]  # each host's own, in host order


def drive_on_hosts(spec: DriveSpec, hosts: ClientHosts, observer: Observer | None = None,
                   monitor: HostsMonitor | None = None, watch: Callable[[], str | None] | None = None,
                   placed: PlacedHosts | None = None) -> HostsResult:
    """Drive ``spec``'s terminals from ``hosts``; what ``scheduler.drive`` gives on one machine, and each host.
    ``placed``: the run's actors, placed for its build already; else they are placed for the drive alone."""
    if placed is not None:
        return _Coordinator(placed, spec, hosts, observer, monitor, watch or (lambda: None)).execute()
    with cluster.placed(hosts.address, hosts.count) as placed_now:
        return drive_on_hosts(spec, hosts, observer, monitor, watch, placed_now)


class _Coordinator:
    def __init__(self, placed: PlacedHosts, spec: DriveSpec, hosts: ClientHosts, observer: Observer | None,
                 monitor: HostsMonitor | None, watch: Callable[[], str | None]) -> None:
        self.ray, self.spec, self.hosts, self.actors = placed.ray, spec, hosts, list(placed.actors)
        self.load_s = placed.load_s
        self.observer, self.monitor, self.watch = observer, monitor, watch
        self.streams = Streams(self.ray, self.actors)
        self.fault: str | None = None
        self.interrupted = False  # Ctrl-C: every host was asked to stop
        self.ctrl_c = False  # a Ctrl-C the loop has not passed on yet
        self.stopping = False
        self.monitoring = False

    def execute(self) -> HostsResult:
        hosts = self._assigned()
        began = time.monotonic()
        runs = self._driven(hosts)
        elapsed = time.monotonic() - began
        self._found(self.watch())  # a fault since the last look
        results = [stream.result(run.result if isinstance(run, HostRun) else lost(self.spec, run))
                   for stream, run in zip(self.streams.hosts, runs)]
        result = merged([(host.name, own) for host, own in zip(hosts, results)], elapsed, self.fault, self.interrupted)
        records = tuple(host.record(run if isinstance(run, HostRun) else None, own,
                                    self._synchronised_if_there(host.actor), result.window)
                        for host, run, own in zip(hosts, runs, results))
        if self.monitor:  # each host's client processes, as one machine's monitor samples its own
            self.monitor.keep([sample for host, stream in zip(hosts, self.streams.hosts)
                               for sample in stream.metric_samples(host_group(host.number))])
        return HostsResult(result, records, tuple(results))

    def _assigned(self) -> list[AssignedHost]:
        """Where each actor runs, its terminals and homes, its clock."""
        places: list[Place] = self.ray.get([actor.place.remote() for actor in self.actors])
        cpus = cluster.node_cpus(self.ray)
        count, homes = self.hosts.count, self.hosts.homes
        shares, dealt = host_terminals(self.spec.terminals, count, homes), host_homes(count, homes)
        return [AssignedHost(k + 1, actor, place, cpus.get(place.node, 0.0), shares[k], dealt[k],
                             homes.unit if homes else "", self._synchronised(actor),
                             self.load_s[k] if self.load_s else None)
                for k, (actor, place) in enumerate(zip(self.actors, places))]

    def _synchronised(self, actor: Any) -> ClockSync:
        return synchronise(lambda: self.ray.get(actor.clocks.remote()))

    def _synchronised_if_there(self, actor: Any) -> ClockSync | None:
        try:
            return self._synchronised(actor)
        except self.ray.exceptions.RayError:  # the host is gone: its run says why
            return None

    def _driven(self, hosts: Sequence[AssignedHost]) -> list[HostRun | str]:
        """Each host's run, or why it has none (its run raised, or its actor was lost), as the hosts end; Ctrl-C stops
        them all."""
        previous = _on_ctrl_c(self._ctrl_c)
        try:
            drives = [host.actor.drive.remote(host.spec(self.spec)) for host in hosts]
            start = self._barrier(hosts)
            if self.observer:
                self.observer.started(self.spec.warmup_s, self.spec.duration_s, self.spec.workload.headline)
            runs = self._wait_for(drives, start)
            self.streams.finish()
            return runs
        finally:
            _on_ctrl_c(previous)
            if self.monitor:
                self.monitor.stop()  # after the hosts are done: its last reading covers all their work

    def _barrier(self, hosts: Sequence[AssignedHost]) -> float:
        """Once every host's workers are ready (or its run ended), a start for all (the coordinator's time)."""
        waiting = [host.actor.ready.remote() for host in hosts]
        while waiting:
            _, waiting = self.ray.wait(waiting, num_returns=len(waiting), timeout=TICK_S)
            self._pass_on_ctrl_c()
        start = time.time() + START_LEAD_S
        for host in hosts:
            host.actor.release.remote(host.clock.host_monotonic(start))
        return start

    def _wait_for(self, refs: list[Any], start: float) -> list[HostRun | str]:
        """The hosts' runs as they end, with the monitor started at the origin, the watch, Ctrl-C and the ticks."""
        done: dict[int, HostRun | str] = {}
        watched_at = 0.0
        while len(done) < len(refs):
            waiting = [ref for k, ref in enumerate(refs) if k not in done]
            ready, _ = self.ray.wait(waiting, num_returns=len(waiting), timeout=TICK_S)
            for ref in ready:
                done[refs.index(ref)] = self._run_of(ref)
            self._start_monitor(start)
            if time.monotonic() - watched_at >= WATCH_EVERY_S:
                watched_at = time.monotonic()
                self._found(self.watch())
            self._pass_on_ctrl_c()
            self._tick(start)
        return [done[k] for k in range(len(refs))]

    def _run_of(self, ref: Any) -> HostRun | str:
        """A host's run as it ended; a host that failed stops the others, as a fault stops one machine's run."""
        try:
            run: HostRun = self.ray.get(ref)
        except self.ray.exceptions.RayError as error:
            self._stop_all()
            return cluster.failure(self.ray, error)
        if run.result.status is RunStatus.FAILED:
            self._stop_all()
        return run

    def _start_monitor(self, start: float) -> None:
        """The monitor starts at the origin, on this machine's monotonic clock (``RunMonitor.start``)."""
        if self.monitor and not self.monitoring and time.time() >= start - TICK_S:
            self.monitoring = True
            self.monitor.start(start - (time.time() - time.monotonic()), [])  # no client process is on this machine

    def _tick(self, start: float) -> None:
        self.streams.poll(TAKE_TIMEOUT_S)
        elapsed = time.time() - start
        if self.observer and elapsed >= 0:
            self.observer.tick(elapsed, *self.streams.counts())

    def _found(self, cause: str | None) -> None:
        if cause and self.fault is None:
            self.fault = cause
            self._stop_all()

    def _ctrl_c(self, signum: int, frame: Any) -> None:
        """The first Ctrl-C stops every host, in order, from the loop (a Ray call from a signal handler could come
        in the middle of another); a second one stops waiting for them."""
        if self.ctrl_c or self.interrupted:
            raise KeyboardInterrupt
        self.ctrl_c = True

    def _pass_on_ctrl_c(self) -> None:
        if self.ctrl_c and not self.interrupted:
            self.interrupted = True
            self._stop_all()

    def _stop_all(self) -> None:
        if not self.stopping:
            self.stopping = True
            for actor in self.actors:
                actor.stop.remote()


def _on_ctrl_c(handler: Any) -> Any:
    """Install a SIGINT handler and return the one it replaces (only the main thread may)."""
    if handler is None or threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, handler)
