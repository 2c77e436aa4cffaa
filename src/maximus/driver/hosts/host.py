"""One client host: a Ray actor on one node of the cluster that runs its share of the terminals with the driver of a
run on one machine (``driver.scheduler.Run``), from the time origin the coordinator agreed with every host.

The actor is threaded (``coordinator`` makes it with several calls at once), so that ``progress`` and ``stop`` are
answered while ``drive`` runs. This module imports Ray only in the actor, where it is there.
"""

from __future__ import annotations

import resource
import threading
import time
from dataclasses import dataclass

from maximus.driver.hosts.clock import HostClocks
from maximus.driver.scheduler import DriveResult, DriveSpec, Run
from maximus.records import Headline


@dataclass(frozen=True)
class HostRun:
    """What a host hands back: its run, and what its client cost."""

    result: DriveResult
    client_cpu_s: float  # its terminal and deferred processes' CPU, and its own, over ``result.elapsed_s``
    late_start_s: float  # its workers were ready this long after the agreed origin (0: in time)


@dataclass(frozen=True)
class Place:
    """Where a host runs: its Ray node and the node's IP address."""

    node: str
    address: str


class _Counts:
    """The driver's ``Observer`` in the host: the latest counts, and when the workers were released."""

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

    def place(self) -> Place:
        import ray  # in the actor only: the coordinator's machine may be the one without a node

        return Place(ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address())

    def clocks(self) -> HostClocks:
        return time.time(), time.monotonic()

    def drive(self, spec: DriveSpec) -> HostRun:
        """Run ``spec``'s terminals (``spec.indices``) from its origin (``spec.start_at``), and what they cost."""
        run = Run(spec, self._counts)
        with self._lock:
            self._run = run
            if self._stopped:
                run.stop()
        before = _cpu_seconds()
        result = run.execute()
        released = self._counts.released_at
        late = max(0.0, released - spec.start_at) if released is not None and spec.start_at is not None else 0.0
        return HostRun(result, _cpu_seconds() - before, late)

    def progress(self) -> tuple[int, int]:
        """The headline's transactions and all transactions done so far, as the terminals count them live."""
        return self._counts.headline_done, self._counts.all_done

    def stop(self) -> None:
        """End the run early, as a Ctrl-C does on one machine: its terminals finish their transaction and stop."""
        with self._lock:
            self._stopped = True
            if self._run is not None:
                self._run.stop()


def _cpu_seconds() -> float:
    """User and system CPU of this process and of its children that have ended (the run's workers, once joined)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
