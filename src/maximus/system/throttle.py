"""Slower disks on demand: the processes that do a run's database I/O put in a cgroup of their own (cgroup v1
``blkio``) whose ``blkio.throttle.*_device`` rules limit what they read and write on the layout's device (or the
work directory's disk) to given IOPS and bytes per second; see ``docs/os.md`` for what the kernel does and does not
throttle. The cgroup is journaled before it is made, and removed after, its processes moved back where they were
(``cgroups``).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from maximus.errors import UserError
from maximus.system import cgroups
from maximus.system.journal import Journal
from maximus.system.storage import Placement

CONTROLLER = "blkio"
BLKIO = cgroups.hierarchy(CONTROLLER)
_PURPOSE = "storage throttles"


def has_blkio() -> bool:
    return cgroups.has_controller(CONTROLLER)


@contextmanager
def throttled(placement: Placement, main_pid: int, journal: Journal) -> Iterator[None]:
    """The layout's throttle for the block on ``main_pid``, its children, and the processes they start."""
    if placement.layout is None or not placement.layout.throttle:
        yield
        return
    if not placement.device_number:
        raise UserError(f"storage throttles: {placement.layout.filesystem} is on no block device to throttle")
    with cgroups.made(CONTROLLER, journal, _PURPOSE) as group:
        for rule, value in placement.layout.throttle:
            cgroups.write(group, f"blkio.throttle.{rule}", f"{placement.device_number} {value}",
                          f"the kernel refused the throttle {rule}={value}")
        cgroups.join_tree(group, main_pid, _PURPOSE)
        yield
