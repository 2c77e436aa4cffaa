"""A server's process tree as one process group (samplers/processes.py), read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maximus.samplers.base import Reading
from maximus.pids import parse_pid_stat
from maximus.samplers.processes import ProcessTree


def _values(readings: list[Reading], name: str) -> dict[tuple, float]:
    return {tuple(sorted(r.labels.items())): r.value for r in readings if r.name == name}


def test_process_times_survive_a_command_name_with_spaces_and_parentheses() -> None:
    text = "42 (postgres: a) b) S 7 42 42 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 1 0 1000 0 0"
    times = parse_pid_stat(text)
    assert (times.state, times.parent) == ("S", 7)
    ticks = os.sysconf("SC_CLK_TCK")
    assert (times.user_s, times.system_s, times.children_user_s, times.children_system_s) == \
        (250 / ticks, 50 / ticks, 30 / ticks, 20 / ticks)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc needed")
def test_the_server_group_keeps_the_cpu_of_children_that_exited() -> None:
    """This process stands in for the postmaster: its burning child counts alive, and after it is reaped."""
    group = ProcessTree(os.getpid(), with_io=True)
    before = _cpu(group.read())
    burner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                               "while time.process_time() < end: pass\ninput()"], stdin=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while _cpu(alive := group.read()) - before < 0.25 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _values(alive, "processes")[(("group", "server"),)] >= 2
    burner.communicate("\n", timeout=30)  # exits and is reaped: its CPU moves into our cutime
    after = group.read()
    assert _cpu(after) - before >= 0.25 and _cpu(after) >= _cpu(alive)
    assert all(_values(after, name) for name in ("process_read_bytes_total", "process_written_bytes_total"))


def _cpu(readings: list[Reading]) -> float:
    return sum(_values(readings, "process_cpu_seconds_total").values())
