"""One client host: a Ray actor on one node of the cluster that runs its share of the terminals with the driver of a
run on one machine (``driver.scheduler.Run``), from the time origin the coordinator agreed with every host; and, when
the run builds its database first, loads its own homes' rows with the loader of a build on one machine (``load``).

The start barrier: ``drive`` starts the host's workers and, once they are ready, waits; ``ready`` answers the
coordinator then, and ``release`` gives the origin the coordinator picked once every host was ready. The actor is
threaded (``cluster`` makes it with several calls at once), so that these, ``take`` and ``stop`` are answered while
``drive`` runs. This module imports Ray only in the actor, where it is there.

What the terminals record streams back: the run hands each batch its workers send to the host's ``Outbox`` rather than
keeping it, and the coordinator's ``take``, about twice a second and once after the run, empties it. So the host
holds no more than half a second of samples, and the coordinator has what a lost host measured until it was lost.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Sequence

from maximus.client_hosts import HOST_CPU_SECONDS
from maximus.driver.hosts.clock import HostClocks
from maximus.driver.scheduler import DriveResult, DriveSpec, Run
from maximus.records import Headline
from maximus.samplers.os_linux import ProcessGroup, machine_cpu_readings
from maximus.workloads.base import SplitLoad


@dataclass(frozen=True)
class HostRun:
    """What a host hands back at the end: its run (whose samples, deferred results and facts it streamed instead:
    ``Streamed``), and what its client cost."""

    result: DriveResult
    client_cpu_s: float  # its terminal and deferred processes' CPU, and its own, over ``result.elapsed_s``
    late_start_s: float  # its workers were released this long after the agreed origin (0: in time)
    niceness: int  # its workers'


@dataclass(frozen=True)
class HostLoad:
    """What a host hands back of its share of a build: the rows it wrote, per table, and how long it took."""

    rows: dict[str, int]
    seconds: float


@dataclass(frozen=True)
class Place:
    """Where a host runs: its Ray node and the node's IP address."""

    node: str
    address: str


# A reading of a host's client processes or of its machine's CPU as it travels: (seconds from the run's origin, name,
# value, unit, labels), an OS sampler's ``Reading`` with its time, its labels a plain dict
HostReading = tuple[float, str, float, str, dict[str, str]]


@dataclass(frozen=True)
class Streamed:
    """What a host's terminals recorded since the last ``take``, as it travels (``collected.Collected`` and
    ``terminal.result_from_wire`` read it), and the host's live counts."""

    samples: list[tuple]
    runs: list[tuple]  # runs of committed transactions, as they travel
    origin: float  # the run's origin on the host's monotonic clock, which the runs are timed from
    results: list[tuple]  # deferred transactions' result records
    facts: dict[str, int]  # in-window facts, summed
    headline_done: int
    all_done: int
    readings: list[HostReading] = field(default_factory=list)  # ``HostSampler``'s: its client processes', its CPU


class Outbox:
    """The run's records between two ``take``s: filled by the run's thread (a ``scheduler.Sink``), emptied by the
    coordinator's calls on another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: list[tuple] = []
        self._runs: list[tuple] = []
        self._results: list[tuple] = []
        self._facts: Counter[str] = Counter()
        self.origin = 0.0  # the run's time origin on this host's monotonic clock: committed runs are timed from it

    def put(self, samples: list[tuple], runs: list[tuple], results: list[tuple], facts: dict[str, int]) -> None:
        with self._lock:
            self._samples += samples
            self._runs += runs
            self._results += results
            self._facts.update(facts)

    def take(self, counts: tuple[int, int]) -> Streamed:
        with self._lock:
            samples, runs, results, facts = self._samples, self._runs, self._results, self._facts
            self._samples, self._runs, self._results, self._facts = [], [], [], Counter()
        return Streamed(samples, runs, self.origin, results, dict(facts), *counts)


class HostSampler:
    """A host's run's monitor (``scheduler.RunMonitor``): its terminal and deferred processes' CPU and how many are
    alive, as the OS sampler reads the client's on one machine, and its machine's CPU per mode (``HOST_CPU_SECONDS``:
    what else took the CPUs its terminals needed), read at each ``take`` (about twice a second), at the release and
    once the workers are gone; timed in seconds from the run's origin."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._group: ProcessGroup | None = None
        self._origin = 0.0
        self._readings: list[HostReading] = []

    def start(self, origin: float, client_pids: Sequence[int]) -> None:
        with self._lock:
            self._origin, self._group = origin, ProcessGroup("client", tuple(client_pids), with_io=False)
        self.read()

    def stop(self) -> None:
        self.read()

    def read(self) -> None:
        with self._lock:
            if self._group is not None:
                at = time.monotonic() - self._origin
                self._readings += [(at, name, float(value), unit, dict(labels))
                                   for name, value, unit, labels in self._group.read()]
                self._readings += [(at, HOST_CPU_SECONDS, float(value), unit, dict(labels))
                                   for _, value, unit, labels in machine_cpu_readings()]

    def taken(self) -> list[HostReading]:
        """The readings since the last call."""
        with self._lock:
            readings, self._readings = self._readings, []
        return readings


class _Counts:
    """The driver's ``Observer`` in the host: the latest counts, and when the workers were released (this host's
    monotonic clock)."""

    def __init__(self) -> None:
        self.headline_done = self.all_done = 0
        self.released_at: float | None = None

    def started(self, warmup_s: float, duration_s: float, headline: Headline) -> None:
        self.released_at = time.monotonic()

    def tick(self, elapsed_s: float, headline_done: int, all_done: int) -> None:
        self.headline_done, self.all_done = headline_done, all_done


class ClientHost:
    """The terminals of one host, driven once."""

    def __init__(self) -> None:
        self._run: Run | None = None
        self._stopped = False  # a stop that came before the run
        self._lock = threading.Lock()
        self._counts = _Counts()
        self._outbox = Outbox()
        self._sampler = HostSampler()
        self._ready = threading.Event()  # its workers are ready, or its run ended before they were
        self._go = threading.Event()  # released, or stopped
        self._origin: float | None = None
        self._loaded: dict[str, int] = {}  # rows written so far by ``load``, per table

    def place(self) -> Place:
        import ray  # in the actor only: the coordinator's machine may be the one without a node

        return Place(ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address())

    def clocks(self) -> HostClocks:
        return time.time(), time.monotonic()

    def drive(self, spec: DriveSpec) -> HostRun:
        """Run ``spec``'s terminals (``spec.indices``) from the origin ``release`` gives, and what they cost; what
        they record is ``take``n meanwhile and after."""
        niceness = _as_the_node_schedules()
        run = Run(spec, self._counts, self._sampler, release=self._released, sink=self._outbox.put)
        with self._lock:
            self._run = run
            if self._stopped:
                run.stop()
        before = _cpu_seconds()
        try:
            result = run.execute()
        finally:
            self._ready.set()  # a run that failed before its workers were ready: the coordinator waits no longer
            with self._lock:
                # Let the run go: its queues' and events' named semaphores are unlinked as they go, where the
                # actor, killed at the end (``placed_hosts``), would leave them in /dev/shm for good
                self._run = None
        return HostRun(result, result.workers_cpu_s + _cpu_seconds() - before, self._lateness(), niceness)

    def load(self, build: SplitLoad, homes: Sequence[int], processes: int) -> HostLoad:
        """Write the rows of ``homes`` of ``build``, by up to ``processes`` loader processes of this host, at the
        node's niceness as its terminals run."""
        _as_the_node_schedules()
        began = time.monotonic()
        build.load_homes(homes, processes, self._count)
        return HostLoad(self.loaded(), time.monotonic() - began)

    def loaded(self) -> dict[str, int]:
        """The rows ``load`` has written so far, per table."""
        with self._lock:
            return dict(self._loaded)

    def _count(self, table: str, rows: int) -> None:
        with self._lock:
            self._loaded[table] = self._loaded.get(table, 0) + rows

    def ready(self) -> None:
        """Returns once the host's workers are ready (or its run has ended)."""
        self._ready.wait()

    def release(self, origin: float) -> None:
        """Start the host's terminals at ``origin``, the agreed start on this host's monotonic clock."""
        self._origin = origin
        self._go.set()

    def _released(self) -> float:
        self._ready.set()
        self._go.wait()
        self._outbox.origin = self._origin if self._origin is not None else time.monotonic()  # stopped before it
        return self._outbox.origin

    def _lateness(self) -> float:
        """How long after the agreed origin its workers were released: the release came late."""
        released, origin = self._counts.released_at, self._origin
        return max(0.0, released - origin) if released is not None and origin is not None else 0.0

    def take(self) -> Streamed:
        """What the terminals recorded since the last take, and the headline's transactions and all transactions done
        so far, as the terminals count them live, and its client processes' counters now. After ``drive`` has
        returned, the last of its records."""
        self._sampler.read()
        streamed = self._outbox.take((self._counts.headline_done, self._counts.all_done))
        return replace(streamed, readings=self._sampler.taken())

    def stop(self) -> None:
        """End the run early, as a Ctrl-C does on one machine: its terminals finish their transaction and stop."""
        with self._lock:
            self._stopped = True
            if self._run is not None:
                self._run.stop()
        self._go.set()


def _as_the_node_schedules() -> int:
    """The niceness of the node's raylet for this thread, and so for the workers it starts; what they run at.

    Ray starts its workers at a niceness of their own (``RAY_worker_niceness``, 15 by default), to leave the CPU to
    its own processes. A host's terminals must take the CPU as the terminals of one machine do: at 15 they gave way to
    every other process of a busy host, and one host delivered a quarter of the transactions of a run on the same
    machine without Ray. Lowering a niceness needs root (or CAP_SYS_NICE); without, it stays, and the run warns.
    """
    raylet = os.environ.get("RAY_RAYLET_PID")
    try:
        node = os.getpriority(os.PRIO_PROCESS, int(raylet)) if raylet else 0
        os.setpriority(os.PRIO_PROCESS, 0, node)  # Linux: the calling thread's, which the workers it forks inherit
    except (OSError, ValueError):
        pass
    return os.getpriority(os.PRIO_PROCESS, 0)


def _cpu_seconds() -> float:
    """User and system CPU of this process: its workers' is the one they report (``DriveResult.workers_cpu_s``)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime
