"""Memory limits on a run's processes (``server.memory``, ``client.memory``): the processes put in a cgroup of their
own (cgroup v1 ``memory``) whose ``memory.limit_in_bytes`` bounds what they may hold in RAM, their own memory and the
page cache they read or write alike, so that a storage-bound workload meets the device rather than the OS's cache
without a table larger than the machine's RAM. See ``docs/os.md`` for what the limit counts and what a too-small one
does.

The group is made with ``cgroups`` (journaled before it is made, removed after the run, its processes moved back).
The swap limit (``memory.memsw.limit_in_bytes``) is set to the same value, so that the processes' memory cannot go to
swap instead of being bounded. The kernel's OOM killer is left on: with it off, a process over the limit that cannot
reclaim waits in the kernel until memory is freed, and the run would hang rather than fail; its kills are counted
(``oom_kill`` of ``memory.oom_control``) and named as the cause of a run that failed.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from maximus.system import cgroups
from maximus.system.journal import Journal

CONTROLLER = "memory"
MEMORY = cgroups.hierarchy(CONTROLLER)


def has_memory() -> bool:
    return cgroups.has_controller(CONTROLLER)


@dataclass(frozen=True)
class LimitedGroup:
    """A memory cgroup in force: its knob, limit and path, read for the run's record."""

    knob: str
    limit: int
    path: Path

    def usage(self) -> dict[str, object]:
        """The limit and what the group saw so far: its peak usage, how often it hit the limit, the page cache it
        holds now, and the processes the OOM killer ended in it."""
        stat = _stat(self.path)
        return {"limit_bytes": self.limit, "cgroup": str(self.path),
                "max_usage_bytes": _number(self.path / "memory.max_usage_in_bytes"),
                "failcnt": _number(self.path / "memory.failcnt"),
                "cache_bytes": stat.get("cache", 0), "rss_bytes": stat.get("rss", 0),
                "oom_kills": self.oom_kills()}

    def oom_kills(self) -> int:
        return _oom_control(self.path).get("oom_kill", 0)

    def lift(self) -> None:
        """No limit any more (the swap's first, which may not be below the memory's): a server the OOM killer already
        broke can then stop, instead of being killed again as its shutdown needs memory (pg_ctl waited 120 s)."""
        for attribute in ("memory.memsw.limit_in_bytes", "memory.limit_in_bytes"):
            if (self.path / attribute).exists():
                (self.path / attribute).write_text("-1")


@contextmanager
def limited(knob: str, limit: int, main_pid: int, journal: Journal, data_path: Path) -> Iterator[LimitedGroup]:
    """``main_pid`` and its descendants (and the processes they start) held to ``limit`` bytes of RAM for the block.
    The clean cache of the database's files under ``data_path`` is dropped first: pages cached before the limit are
    charged to the group that read them, and a read that finds them costs this group nothing."""
    with cgroups.made(CONTROLLER, journal, knob) as group:
        cgroups.write(group, "memory.limit_in_bytes", str(limit), f"the kernel refused {knob}={limit}")
        if (group / "memory.memsw.limit_in_bytes").exists():  # only where the kernel accounts swap
            cgroups.write(group, "memory.memsw.limit_in_bytes", str(limit), f"the kernel refused {knob}={limit} "
                          "as a limit of memory and swap")
        drop_cached(data_path)
        cgroups.join_tree(group, main_pid, knob)
        yield LimitedGroup(knob, limit, group)


def drop_cached(path: Path) -> list[Path]:
    """The clean pages of the files under ``path`` out of the page cache (``POSIX_FADV_DONTNEED``); dirty ones stay
    until they are written back. No file is changed. Returns the files this process may not read, whose pages
    stay."""
    refused = []
    for file in [path] if path.is_file() else _files(path):
        try:
            descriptor = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except PermissionError:
            refused.append(file)
            continue
        except OSError:
            continue  # gone meanwhile, a socket or a link
        try:
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)
    return refused


def _files(directory: Path) -> Iterator[Path]:
    for root, _, names in os.walk(directory):
        for name in names:
            yield Path(root) / name


def _stat(group: Path) -> dict[str, int]:
    return _pairs(group / "memory.stat")


def _oom_control(group: Path) -> dict[str, int]:
    return _pairs(group / "memory.oom_control")


def _pairs(path: Path) -> dict[str, int]:
    """A cgroup file of ``name number`` lines."""
    pairs = {}
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            pairs[name] = int(value)
    return pairs


def _number(path: Path) -> int:
    return int(path.read_text().strip())
