"""Workloads, registered in one table: adding one touches nothing else."""

from __future__ import annotations

from maximus.errors import UserError
from maximus.workloads.base import Workload
from maximus.workloads.io import IoRandom, IoScan
from maximus.workloads.tpcb import Tpcb
from maximus.workloads.tpcc import Tpcc

WORKLOADS: dict[str, type[Workload]] = {Tpcc.name: Tpcc, Tpcb.name: Tpcb, IoRandom.name: IoRandom,
                                        IoScan.name: IoScan}


def workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]()
    except KeyError:
        raise UserError(f"unknown workload {name!r} (available: {', '.join(WORKLOADS)})") from None
