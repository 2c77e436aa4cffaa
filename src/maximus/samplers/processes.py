"""A server's processes as one process group, read from ``/proc`` (Linux): what a server engine's sampler
reports as ``process_*{group=server}``, so that the server's CPU and I/O are told from the client's.

A server's main process (PostgreSQL's postmaster) and all its children, children that exited included.
The kernel adds the CPU time and I/O of a child its parent has waited for to the parent's own counters
(``cutime``/``cstime`` in ``stat``; ``io``), and a server waits for every child it forks. So the main
process + its reaped children + its live children covers every server process that ever ran. The
readings have the names of ``os_linux``'s process groups; ``/proc``'s files are parsed there.
"""

from __future__ import annotations

import os
from collections import Counter as Tally
from pathlib import Path

from maximus import environment
from maximus.pids import PidStat, parse_pid_stat
from maximus.samplers import os_linux
from maximus.samplers.base import Reading, SamplerUnavailable


def _read(path: Path) -> str:
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read()


def _stat(pid: int) -> PidStat:
    return parse_pid_stat(_read(environment.PROC / str(pid) / "stat"))


def children_of(pid: int) -> list[int]:
    """Direct children of a single-threaded process: its ``children`` file, or a scan of ``/proc``."""
    try:
        return [int(child) for child in _read(environment.PROC / str(pid) / "task" / str(pid) / "children").split()]
    except FileNotFoundError:  # kernels built without CONFIG_PROC_CHILDREN
        return [int(entry) for entry in os.listdir(environment.PROC) if entry.isdigit() and _parent(int(entry)) == pid]


def _parent(pid: int) -> int | None:
    try:
        return _stat(pid).parent
    except (OSError, ValueError, IndexError):
        return None


def pid_in_file(pid_file: Path) -> int:
    """The server's main pid: the first line of its pid file (PostgreSQL's ``postmaster.pid``)."""
    try:
        return int(_read(pid_file).split()[0])
    except (OSError, ValueError, IndexError) as error:
        raise SamplerUnavailable(f"cannot read the server's pid from {pid_file}: {error}") from None


def io_readable(pid: int) -> bool:
    """Whether ``/proc/PID/io`` can be read here (another user's process needs privileges)."""
    try:
        return bool(os_linux.parse_pid_io(_read(environment.PROC / str(pid) / "io")))
    except OSError:
        return False


class ProcessTree:
    """A main process and its children as the process group ``group``, children that exited included.

    The main process is read first: a child reaped in between is then missing from one reading, never
    counted twice; the counters are also kept from ever going back.
    """

    def __init__(self, root: int, with_io: bool, group: str = "server") -> None:
        self.root = root
        self.with_io = with_io
        self.group = group
        self._highest: dict[str, float] = {}

    def read(self) -> list[Reading]:
        main = _stat(self.root)  # the server died: raise
        user, system = main.user_s + main.children_user_s, main.system_s + main.children_system_s
        io = Tally(self._io(self.root))
        alive = 1
        for child in children_of(self.root):
            try:
                times = _stat(child)
            except (OSError, ValueError, IndexError):
                continue  # exited since the list was read: its counters reach the main process's
            user += times.user_s + times.children_user_s
            system += times.system_s + times.children_system_s
            io.update(self._io(child))
            alive += times.state not in ("Z", "X")
        labels = {"group": self.group}
        readings = [Reading("process_cpu_seconds_total", self._never_less("user", user), "s",
                            {**labels, "mode": "user"}),
                    Reading("process_cpu_seconds_total", self._never_less("system", system), "s",
                            {**labels, "mode": "system"}),
                    Reading("processes", alive, "count", labels)]
        if self.with_io:
            readings += [Reading(name, self._never_less(key, io[key]), unit, labels)
                         for key, (name, unit) in os_linux.PROCESS_IO.items()]
        return readings

    def _io(self, pid: int) -> dict[str, int]:
        if not self.with_io:
            return {}
        try:
            return os_linux.parse_pid_io(_read(environment.PROC / str(pid) / "io"))
        except OSError:
            return {}  # exited (or a zombie): its I/O reaches the main process's counters when reaped

    def _never_less(self, key: str, value: float) -> float:
        self._highest[key] = max(value, self._highest.get(key, 0.0))
        return self._highest[key]
