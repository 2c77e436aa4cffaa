"""The driver's process handling: early stop before the start, and a worker that cannot start."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Sequence

import pytest

from maximus import api
from maximus.driver.schedule import RateSchedule
from maximus.driver.terminal import SCHEDULED_SLICE_NS
from maximus.driver.scheduler import DriveSpec, Run
from maximus.errors import EngineError
from maximus.records import RunStatus
from maximus.workloads.tpcc import Tpcc
from maximus.workloads.tpcc.emulator import TpccRunSettings
from maximus.workloads.tpcc.random import NURandConstants

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})

SETTINGS = TpccRunSettings(1, 1, NURandConstants.for_run(0, 1))


def test_stop_during_the_run_ends_it_early_and_keeps_samples(workdir: Path) -> None:
    engine = api.make_engine("sqlite", workdir, ONE_WAREHOUSE, {})
    engine.restore()
    run = Run(DriveSpec(engine, Tpcc(), SETTINGS, 2, 0.5, 60.0))
    threading.Timer(3.0, run.stop).start()
    result = run.execute()
    assert result.status is RunStatus.INTERRUPTED
    assert result.elapsed_s < 30 and len(result.samples) > 10


def test_a_terminal_that_cannot_connect_fails_the_run_with_one_line(tmp_path: Path) -> None:
    engine = api.make_engine("sqlite", tmp_path / "missing" / "dir", ONE_WAREHOUSE, {})  # no such directory
    with pytest.raises(EngineError, match="could not start"):
        Run(DriveSpec(engine, Tpcc(), SETTINGS, 2, 0.5, 5.0)).execute()


def _slice_ns(pid: int) -> int:
    """The slice the kernel gives the process (EEVDF's, in /proc/PID/sched)."""
    line = next(line for line in Path(f"/proc/{pid}/sched").read_text().splitlines() if line.startswith("se.slice"))
    return int(line.split(":")[1])


class _Policies:
    """A run monitor that reads the workers' scheduling policies as the run starts: they are set by then."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.slices: list[int] = []

    def start(self, origin: float, client_pids: Sequence[int]) -> None:
        self.seen = [os.sched_getscheduler(pid) for pid in client_pids]
        self.slices = [_slice_ns(pid) for pid in client_pids]

    def stop(self) -> None:
        pass


def test_an_embedded_engines_workers_keep_the_default_scheduling_policy(workdir: Path) -> None:
    """SQLite's work runs in its terminals: under SCHED_BATCH a terminal woken by its fsync would wait for the CPU
    with the write lock held, where a server engine's terminal yields to the server."""
    engine = api.make_engine("sqlite", workdir, ONE_WAREHOUSE, {})
    engine.restore()
    policies = _Policies()
    Run(DriveSpec(engine, Tpcc(), SETTINGS, 1, 0.1, 0.3), monitor=policies).execute()
    assert policies.seen == [os.SCHED_OTHER, os.SCHED_OTHER]  # the terminal and the deferred worker


def test_a_scheduled_terminal_asks_for_the_shortest_slice_to_wake_at_its_intended_starts(workdir: Path) -> None:
    """A fixed-rate run's terminals keep the default policy and take a 100-µs slice, so that a busy process with the
    default slice does not hold them past their intended starts (the scheduler's start error, issue #45)."""
    engine = api.make_engine("sqlite", workdir, ONE_WAREHOUSE, {})
    engine.restore()
    policies = _Policies()
    schedule = RateSchedule(50.0, "regular", 2, 1)
    Run(DriveSpec(engine, Tpcc(), SETTINGS, 2, 0.1, 0.3, schedule=schedule), monitor=policies).execute()
    terminals = len(policies.slices) - 1  # the deferred worker last
    assert terminals == 2 and policies.seen[:terminals] == [os.SCHED_OTHER] * terminals
    assert policies.slices[:terminals] == [SCHEDULED_SLICE_NS] * terminals
    assert policies.slices[-1] > SCHEDULED_SLICE_NS  # the deferred worker runs no schedule: the default slice
