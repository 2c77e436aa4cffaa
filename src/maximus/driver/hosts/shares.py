"""Which terminals each client host runs: disjoint homes, so that no two hosts' terminals share a home warehouse.

Terminal i's home is the (i % W + 1)-th of W (TPC-C 4.2.2, ``Workload.homes``). The homes are dealt to the hosts in
turn, as the terminals are dealt to the homes: host k (0-based) gets homes k + 1, k + 1 + N, ... of N hosts, and every
terminal whose home is one of them. Each terminal keeps the home, the seed and the schedule it has on one machine, so
the hosts together run exactly the terminals one machine would.
"""

from __future__ import annotations

from maximus.errors import UserError
from maximus.workloads.base import Homes


def host_terminals(terminals: int, hosts: int, homes: Homes | None) -> list[tuple[int, ...]]:
    """Each host's terminals, of 0..terminals-1; terminals without a home are dealt to the hosts in turn."""
    count = homes.count if homes else terminals
    return [tuple(index for index in range(terminals) if index % count % hosts == host) for host in range(hosts)]


def host_homes(hosts: int, homes: Homes | None) -> list[tuple[int, ...]]:
    """Each host's homes, 1-based; () each for terminals without homes."""
    if homes is None:
        return [() for _ in range(hosts)]
    return [tuple(home + 1 for home in range(homes.count) if home % hosts == host) for host in range(hosts)]


def check_shares(terminals: int, hosts: int, homes: Homes | None) -> None:
    """Every host gets a home of its own and a terminal, or a one-line ``UserError`` says what is missing."""
    if homes is not None and homes.count < hosts:
        raise UserError(f"--hosts {hosts} needs at least {hosts} {homes.unit}: each host's terminals have "
                        f"{homes.unit} of their own, and a terminal keeps its home: got {homes.count}")
    if terminals < hosts:
        raise UserError(f"--hosts {hosts} needs at least {hosts} terminals, one for each host: got {terminals}")
