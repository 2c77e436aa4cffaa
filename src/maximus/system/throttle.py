"""Slower disks on demand: the processes that do a run's database I/O put in a cgroup of their own (cgroup v1
``blkio``) whose ``blkio.throttle.*_device`` rules limit what they read and write on the layout's device (or the
work directory's disk) to given IOPS and bytes per second; see ``docs/os.md`` for what the kernel does and does not
throttle. The cgroup is journaled before it is made, and removed after, its processes moved back where they were.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from maximus.errors import EngineError, UserError
from maximus.system import processes
from maximus.system.journal import Cgroup, Journal
from maximus.system.storage import Placement

BLKIO = Path("/sys/fs/cgroup/blkio")


def has_blkio() -> bool:
    return (BLKIO / "cgroup.procs").exists()


@contextmanager
def throttled(placement: Placement, main_pid: int, journal: Journal) -> Iterator[None]:
    """The layout's throttle for the block on ``main_pid``, its children, and the processes they start."""
    if placement.layout is None or not placement.layout.throttle:
        yield
        return
    if not placement.device_number:
        raise UserError(f"storage throttles: {placement.layout.filesystem} is on no block device to throttle")
    pids = processes.tree(main_pid)
    with journal.scope() as scope:
        group = _own_blkio_group() / f"maximus-{os.getpid()}-{time.monotonic_ns()}"
        scope.record(Cgroup(str(group)))
        try:
            group.mkdir()
        except OSError as error:
            scope.forget_last()
            raise EngineError(f"storage throttles: cannot make the cgroup {group}: {error.strerror}") from None
        for rule, value in placement.layout.throttle:
            _write_rule(group / f"blkio.throttle.{rule}", f"{placement.device_number} {value}", rule, value)
        for pid in pids:
            _join(group, pid)
        yield


def _join(group: Path, pid: int) -> None:
    try:
        (group / "cgroup.procs").write_text(str(pid))
    except ProcessLookupError:
        pass  # it ended meanwhile
    except OSError as error:
        raise EngineError(f"storage throttles: process {pid} cannot join {group}: {error.strerror}") from None


def _own_blkio_group() -> Path:
    """The blkio cgroup this process is in: the throttle's is made inside it, and its processes go back to it."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "blkio" in controllers.split(","):
            return BLKIO / path.lstrip("/")
    return BLKIO


def _write_rule(path: Path, rule: str, name: str, value: str) -> None:
    try:
        path.write_text(rule)
    except OSError as error:
        raise EngineError(f"the kernel refused the throttle {name}={value} ({path}): {error.strerror}") from None
