"""A client host as the coordinator knows it: its actor, where it runs, its share of the run, its clock; and the
record of it kept with the run (``maximus.client_hosts``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from maximus.client_hosts import ClientHostRecord
from maximus.driver.hosts.clock import ClockSync
from maximus.driver.hosts.host import HostRun, Place
from maximus.driver.scheduler import DriveResult, DriveSpec
from maximus.records import RunStatus, Window
from maximus.samples import Samples


@dataclass(frozen=True)
class AssignedHost:
    number: int  # 1, 2, ...
    actor: Any  # its ``host.ClientHost`` actor
    place: Place
    cpus: float  # the CPUs Ray gave its node
    terminals: tuple[int, ...]
    homes: tuple[int, ...]
    home_unit: str
    clock: ClockSync  # before the run
    load_s: float | None = None  # its load of its homes, when the run built its database on the hosts

    @property
    def name(self) -> str:
        return f"host {self.number} ({self.place.address})"

    def spec(self, spec: DriveSpec) -> DriveSpec:
        """Its share of ``spec``: its terminals, shared by processes as its CPUs allow (as one machine's are by its
        cores), and its share of the deferred workers."""
        shared = spec.hosting != "process"
        per_process = -(-len(self.terminals) // min(len(self.terminals), max(1, int(self.cpus)))) if shared else 1
        deferred = max(1, round(spec.deferred_workers * len(self.terminals) / spec.terminals)) \
            if spec.deferred_workers else 0
        return replace(spec, indices=self.terminals, terminals_per_process=per_process, deferred_workers=deferred)

    def record(self, run: HostRun | None, result: DriveResult, after: ClockSync | None,
               window: Window) -> ClientHostRecord:
        """What it did (``result``: its run's, or a lost host's) and cost (``run``; None: it was lost); its
        transactions are counted in the merged run's ``window``."""
        samples = result.samples
        in_window = samples.in_window(window)
        lag = (samples.start - samples.intended)[in_window & samples.timed]
        return ClientHostRecord(
            host=self.number, node=self.place.node, address=self.place.address, cpus=self.cpus,
            terminals=self.terminals, homes=self.homes, home_unit=self.home_unit, clock_before=self.clock.reading,
            clock_after=after.reading if after else None, late_start_s=run.late_start_s if run else 0.0,
            niceness=run.niceness if run else 0, client_cpu_s=run.client_cpu_s if run else 0.0,
            elapsed_s=result.elapsed_s, transactions=int(np.count_nonzero(in_window)),
            schedule_lag_p99_s=_p99(lag),
            status=result.status.value, load_s=self.load_s)


def lost(spec: DriveSpec, why: str) -> DriveResult:
    """The run of a host that handed back none (its run raised, or its actor was lost): it measured nothing, and the
    run failed. What it streamed before is kept with it (``streams``), outside its empty window."""
    nothing = Window(spec.warmup_s, spec.warmup_s)
    return DriveResult(Samples.empty(), {}, nothing, RunStatus.FAILED, [why], 0.0)


def _p99(values: np.ndarray) -> float | None:
    """The 99th percentile, nearest rank; None of nothing."""
    if not len(values):
        return None
    return float(np.sort(values)[math.ceil(0.99 * len(values)) - 1])
