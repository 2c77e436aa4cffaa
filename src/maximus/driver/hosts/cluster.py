"""The Ray cluster a run's client hosts are on: connecting to it, and one client actor on each of as many of its
nodes, kept apart by a placement group (STRICT_SPREAD: no two bundles on one node).

Ray is an extra (``maximus[ray]``), imported here only when a run asks for several client hosts; without it, that
run is one line saying how to install it.
"""

from __future__ import annotations

import logging
import socket
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from maximus.driver.hosts.host import ClientHost
from maximus.errors import EngineError, MaximusError, UserError, describe

RAY_MISSING = "--ray needs Ray, an extra of Maximus: pip install 'maximus[ray]'"
REACHED_WITHIN_S = 5.0  # a head that does not accept a connection in this is not there: ray.init would wait for it
# for many minutes
PLACEMENT_TIMEOUT_S = 60.0  # nodes that are there take a second or two to take their bundles
# Calls a host answers at once: drive, and take and stop while it drives, and a ping of its clock
ACTOR_CONCURRENCY = 4


def import_ray() -> Any:
    """The ``ray`` module, or a one-line ``UserError`` naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise UserError(RAY_MISSING) from None
    return ray


def check_reachable(address: str) -> None:
    """The cluster's head accepts connections at ``address`` (HOST:PORT), or a one-line ``UserError`` says so, before
    anything runs. Another form (``auto``, ``ray://``) is left to Ray."""
    host, colon, port = address.rpartition(":")
    if not colon or not port.isdigit() or "/" in address:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACHED_WITHIN_S).close()
    except OSError as error:
        raise UserError(f"--ray {address}: no Ray cluster answers there ({error.strerror or error}); start its head "
                        "with `ray start --head` and give the address it prints") from None


@dataclass
class PlacedHosts:
    """The client actors of one run, one per node, for its build and its terminals alike (so that a host runs the
    terminals of the homes it loaded); and what the build measured of them."""

    ray: Any
    address: str
    actors: list[Any]
    load_s: list[float] | None = None  # each host's load of its homes, in host order; None: it loaded none


@contextmanager
def placed(address: str, count: int) -> Iterator[PlacedHosts]:
    """This process connected to the cluster at ``address``, and ``count`` client actors placed on its nodes, for
    the block."""
    ray = import_ray()
    with connected(ray, address), placed_hosts(ray, address, count) as actors:
        yield PlacedHosts(ray, address, actors)


@contextmanager
def connected(ray: Any, address: str) -> Iterator[None]:
    """This process connected to the cluster at ``address`` as its driver, for the block; the cluster goes on."""
    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise UserError(f"--ray {address}: no Ray cluster could be joined there: {first_line(error)}") from None
    try:
        yield
    finally:
        ray.shutdown()


def node_cpus(ray: Any) -> dict[str, float]:
    """The CPUs Ray gave each live node, by node id; a node without one (a head started with ``--num-cpus 0``, to
    keep clients off the database's machine) takes no client host."""
    return {node["NodeID"]: node["Resources"].get("CPU", 0.0) for node in ray.nodes() if node["Alive"]}


@contextmanager
def placed_hosts(ray: Any, address: str, count: int) -> Iterator[list[Any]]:
    """``count`` client actors, one per node, for the block; killed after it, with their placement group."""
    able = [cpus for cpus in node_cpus(ray).values() if cpus >= 1]
    if len(able) < count:
        raise UserError(f"--hosts {count}: the Ray cluster at {address} has {len(able)} node(s) with a CPU, and each "
                        "client host needs one of its own")
    from ray.util.placement_group import placement_group, remove_placement_group

    group = placement_group([{"CPU": 1}] * count, strategy="STRICT_SPREAD")
    try:
        if not group.wait(PLACEMENT_TIMEOUT_S):
            raise EngineError(f"the Ray cluster at {address} placed no {count} client hosts on {count} nodes within "
                              f"{PLACEMENT_TIMEOUT_S:g} s")
        actors = [_actor(ray, group, bundle) for bundle in range(count)]
        try:
            yield actors
        finally:
            for actor in actors:
                ray.kill(actor)  # its workers die with it (PR_SET_PDEATHSIG), were it still driving
    finally:
        remove_placement_group(group)


def _actor(ray: Any, group: Any, bundle: int) -> Any:
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    placed = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=bundle)
    return ray.remote(ClientHost).options(num_cpus=1, max_concurrency=ACTOR_CONCURRENCY,
                                          scheduling_strategy=placed).remote()


def failure(ray: Any, error: BaseException) -> str:
    """What a call to a host ended with: the error its own code raised (a terminal that could not connect, as on one
    machine), or the actor lost with its node."""
    cause = getattr(error, "cause", None)
    if isinstance(error, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        return str(cause) if isinstance(cause, MaximusError) else describe(cause)
    return f"lost: {first_line(error)}"


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
