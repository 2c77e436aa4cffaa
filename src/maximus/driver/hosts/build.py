"""A run's database build split over its client hosts (issue #45): the coordinator begins and ends the build (the
schema; the keys, indexes and statistics; the build's record: ``database.load_database``) and writes the rows no home
owns, while each host loads the rows of its own homes, those its terminals run next (``shares.host_homes``), with the
loader of a build on one machine (``SplitLoad.load_homes``), over its own connections to the server."""

from __future__ import annotations

from typing import Any, Sequence

from maximus.driver.hosts import cluster
from maximus.driver.hosts.cluster import PlacedHosts
from maximus.driver.hosts.host import HostLoad, Place
from maximus.driver.hosts.shares import host_homes
from maximus.errors import EngineError
from maximus.workloads.base import Progress, SplitLoad

POLL_S = 0.5  # the hosts' rows are counted this often, for the build's progress


def load_on_hosts(build: SplitLoad, placed: PlacedHosts, progress: Progress) -> None:
    """Every home's rows of ``build``, each host's homes loaded by that host, the shared rows by this process
    meanwhile; every row written is told to ``progress``, and each host's time kept in ``placed.load_s``. A host that
    fails ends every host's load, and the build with one line naming the host and its cause."""
    ray, actors = placed.ray, placed.actors
    shares = host_homes(len(actors), build.homes)
    places: list[Place] = ray.get([actor.place.remote() for actor in actors])
    cpus = cluster.node_cpus(ray)
    loads = [actor.load.remote(build, share, max(1, int(cpus.get(place.node, 1.0))))
             for actor, share, place in zip(actors, shares, places)]
    counted = _Counted(actors, progress)
    try:
        build.load_shared(progress)
        done = _awaited(ray, loads, counted, [_failing(k, place, build, share)
                                              for k, (place, share) in enumerate(zip(places, shares))])
    except BaseException:  # nothing of a host's may go on writing into a build that is being discarded
        for actor in actors:
            ray.kill(actor)  # its loader processes die with it
        raise
    placed.load_s = [load.seconds for load in done]


class _Counted:
    """The hosts' rows as told to the build's progress so far; each count read from a host is told as what it adds."""

    def __init__(self, actors: Sequence[Any], progress: Progress) -> None:
        self.actors, self.progress = actors, progress
        self.told: list[dict[str, int]] = [{} for _ in actors]

    def poll(self, ray: Any) -> None:
        try:
            counts = ray.get([actor.loaded.remote() for actor in self.actors], timeout=POLL_S)
        except ray.exceptions.RayError:  # a host busy or gone: its load's end says which
            return
        for host, rows in enumerate(counts):
            self.tell(host, rows)

    def tell(self, host: int, rows: dict[str, int]) -> None:
        for table, count in rows.items():
            added = count - self.told[host].get(table, 0)
            if added > 0:
                self.told[host][table] = count
                self.progress(table, added)


def _awaited(ray: Any, loads: list[Any], counted: _Counted, failing: list[str]) -> list[HostLoad]:
    """Each host's load as it ends, in host order; the first that fails raises, naming its host."""
    done: dict[int, HostLoad] = {}
    while len(done) < len(loads):
        waiting = [ref for k, ref in enumerate(loads) if k not in done]
        ready, _ = ray.wait(waiting, num_returns=len(waiting), timeout=POLL_S)
        for ref in ready:
            host = loads.index(ref)
            try:
                done[host] = ray.get(ref)
            except ray.exceptions.RayError as error:
                raise EngineError(f"{failing[host]}: {cluster.failure(ray, error)}") from None
            counted.tell(host, done[host].rows)
        if len(done) < len(loads):
            counted.poll(ray)
    return [done[k] for k in range(len(loads))]


def _failing(index: int, place: Place, build: SplitLoad, homes: Sequence[int]) -> str:
    """How a host's failure begins: "host 2 (10.0.0.12) failed to load warehouses 2, 4" (of many homes, the first
    two, the last and their count)."""
    listed = ", ".join(map(str, homes)) if len(homes) <= 4 else f"{homes[0]}, {homes[1]}, …, {homes[-1]} ({len(homes)})"
    return f"host {index + 1} ({place.address}) failed to load {build.homes.unit} {listed}"
