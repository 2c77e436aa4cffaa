"""Cgroups (v1) Maximus makes for a run's processes, under one controller's hierarchy: each made inside the one this
process is in, journaled (``journal.Cgroup``) before it is made, and removed by the journal's undoing, its processes
moved back to that parent. The storage throttle's (``blkio``) and the memory limits' (``memory``) are made so."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from maximus.errors import EngineError
from maximus.system import processes
from maximus.system.journal import Cgroup, Journal

HIERARCHIES = Path("/sys/fs/cgroup")
_JOIN_ROUNDS = 20  # a server forking while its tree moves: each round moves the children the last one missed


def hierarchy(controller: str) -> Path:
    return HIERARCHIES / controller


def has_controller(controller: str) -> bool:
    return (hierarchy(controller) / "cgroup.procs").exists()


def own_group(controller: str) -> Path:
    """The ``controller`` cgroup this process is in: a group of Maximus's is made inside it, and its processes go
    back to it."""
    return group_of("self", controller)


def group_of(pid: int | str, controller: str) -> Path:
    """The ``controller`` cgroup process ``pid`` is in (its hierarchy's root when it says none)."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return hierarchy(controller) / path.lstrip("/")
    return hierarchy(controller)


def io_groups_of(pid: int) -> list[Path]:
    """The memory and blkio cgroups of ``pid`` that are not this process's own: where a process doing the same I/O
    (fio beside a run) must be for the same cache bound and throttle."""
    return [group for controller in ("memory", "blkio") if has_controller(controller)
            and (group := group_of(pid, controller)) != own_group(controller)]


@contextmanager
def made(controller: str, journal: Journal, purpose: str) -> Iterator[Path]:
    """A new, empty cgroup of ``controller`` for the block, journaled before it is made, removed after it (its
    processes moved back); ``purpose`` names it in a failure (``storage throttles``)."""
    with journal.scope() as scope:
        group = own_group(controller) / f"maximus-{os.getpid()}-{time.monotonic_ns()}"
        scope.record(Cgroup(str(group)))
        try:
            group.mkdir()
        except OSError as error:
            scope.forget_last()
            raise EngineError(f"{purpose}: cannot make the cgroup {group}: {error.strerror}") from None
        yield group


def join(group: Path, pid: int, purpose: str) -> bool:
    """False when ``pid`` ended meanwhile."""
    try:
        (group / "cgroup.procs").write_text(str(pid))
    except ProcessLookupError:
        return False
    except OSError as error:
        raise EngineError(f"{purpose}: process {pid} cannot join {group}: {error.strerror}") from None
    return True


def join_tree(group: Path, main_pid: int, purpose: str) -> None:
    """``main_pid`` and its descendants into ``group``: those it forks from then on are born in it. A child forked
    while the tree moves, from a parent not yet moved, is caught by the next round."""
    ended: set[int] = set()
    for _ in range(_JOIN_ROUNDS):
        outside = set(processes.tree(main_pid)) - members(group) - ended
        if not outside:
            return
        ended |= {pid for pid in sorted(outside) if not join(group, pid, purpose)}
    raise EngineError(f"{purpose}: the processes of {main_pid} keep forking outside {group}")


def members(group: Path) -> set[int]:
    return {int(pid) for pid in (group / "cgroup.procs").read_text().split()}


def write(group: Path, attribute: str, value: str, refused: str) -> None:
    """One of the group's attributes; the kernel's refusal is one line starting with ``refused``."""
    try:
        (group / attribute).write_text(value)
    except OSError as error:
        raise EngineError(f"{refused} ({group / attribute}): {error.strerror}") from None
