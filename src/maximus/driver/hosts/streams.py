"""The hosts' records as they stream to the coordinator (``host.ClientHost.take``): asked for about twice a second
while the hosts drive and once after, and kept per host until the merge."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, Sequence

from maximus.driver.collected import Collected
from maximus.driver.hosts.host import HostReading, Streamed
from maximus.driver.scheduler import DriveResult
from maximus.driver.terminal import result_from_wire
from maximus.records import MetricSample

LAST_TAKE_TIMEOUT_S = 30.0  # after the runs: a host that cannot hand over its last records in this is lost


class HostStream:
    """One host's records so far, its latest live counts, and the take on its way, if any."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.samples = Collected()
        self.results: list[tuple] = []
        self.facts: Counter[str] = Counter()
        self.readings: list[HostReading] = []
        self.counts = (0, 0)  # the headline's transactions and all transactions
        self.pending: Any = None  # the ObjectRef of a take not answered yet

    def add(self, streamed: Streamed) -> None:
        self.samples.add(streamed.samples, streamed.runs, streamed.origin)
        self.results += streamed.results
        self.facts.update(streamed.facts)
        self.readings += streamed.readings
        self.counts = (streamed.headline_done, streamed.all_done)

    def result(self, ended: DriveResult) -> DriveResult:
        """``ended``, the host's run as it ended (or a lost host's), with the records it streamed."""
        return replace(ended, samples=self.samples.samples(), facts=dict(self.facts),
                       deferred=sorted(map(result_from_wire, self.results), key=lambda entry: entry.queued))

    def metric_samples(self, group: str) -> list[MetricSample]:
        """Its client processes' and its machine's readings as the OS sampler's, labelled with the host's ``group``."""
        return [MetricSample(at, "os", name, value, unit, {**labels, "group": group})
                for at, name, value, unit, labels in self.readings]


class Streams:
    """Every host's stream, in host order."""

    def __init__(self, ray: Any, actors: Sequence[Any]) -> None:
        self.ray = ray
        self.hosts = [HostStream(actor) for actor in actors]

    def poll(self, timeout_s: float) -> None:
        """Ask every host that has no take on its way, and add what is answered within ``timeout_s``: a host too busy
        to answer in time is added at a later poll, nothing it sent is dropped."""
        for host in self.hosts:
            if host.pending is None:
                host.pending = host.actor.take.remote()
        self._collect(timeout_s)

    def finish(self) -> None:
        """After the hosts' runs have ended: the takes on their way, then each host's last records. A lost host's
        stay as they were when it was lost."""
        self._collect(LAST_TAKE_TIMEOUT_S)
        for host in self.hosts:
            host.pending = host.actor.take.remote()
        self._collect(LAST_TAKE_TIMEOUT_S)

    def counts(self) -> tuple[int, int]:
        """The hosts' live counts, summed: the headline's transactions and all transactions."""
        return sum(host.counts[0] for host in self.hosts), sum(host.counts[1] for host in self.hosts)

    def _collect(self, timeout_s: float) -> None:
        waiting = {host.pending: host for host in self.hosts if host.pending is not None}
        if not waiting:
            return
        ready, _ = self.ray.wait(list(waiting), num_returns=len(waiting), timeout=timeout_s)
        for ref in ready:
            host = waiting[ref]
            host.pending = None
            try:
                host.add(self.ray.get(ref))
            except self.ray.exceptions.RayError:  # the host is gone: its run says why
                pass
