"""A process as the kernel describes it in ``/proc/PID/stat``: its CPU times, state, parent and start time. The start
time tells a process from a later one given the same pid: the results store names a run's runner by it, the journal
of machine changes the processes it may end, the samplers the processes they watch."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc times are in these ticks


@dataclass(frozen=True)
class PidStat:
    """What ``/proc/PID/stat`` says about a process's CPU, and about its reaped children's."""

    started: int  # start time in ticks since boot: tells a reused pid from the process we watch
    user_s: float
    system_s: float
    state: str
    parent: int
    children_user_s: float  # children that have exited and been waited for
    children_system_s: float


def parse_pid_stat(text: str) -> PidStat:
    """``/proc/PID/stat``; the command name may hold spaces and ')', so fields count from the last ')'."""
    fields = text[text.rindex(")") + 2:].split()
    user_s, system_s, children_user_s, children_system_s = (int(v) / CLOCK_TICKS for v in fields[11:15])
    return PidStat(int(fields[19]), user_s, system_s, fields[0], int(fields[1]), children_user_s, children_system_s)


def start_time(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None when no such process runs (gone, or a
    zombie: ended, not yet waited for)."""
    try:
        stat = parse_pid_stat(Path(f"/proc/{pid}/stat").read_text())
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if stat.state == "Z" else stat.started
