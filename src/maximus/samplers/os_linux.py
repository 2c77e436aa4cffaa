"""The OS sampler (Linux): CPU, disks, memory and Maximus's own processes, read from ``/proc``.

Readings (source ``os``; counters cumulative since boot, or since the process started):

- ``cpu_seconds_total{mode}``: the whole machine, modes of ``/proc/stat`` (user, nice, system, idle,
  iowait, irq, softirq, steal); ``cpus``: logical CPUs online; ``context_switches_total``;
  ``processes_blocked``: tasks waiting for I/O now.
- ``memory_bytes{kind}``: total, available, page_cache, dirty, writeback (``/proc/meminfo``).
- ``disk_*{device[, role=data]}`` from ``/proc/diskstats``: reads, writes, bytes, time spent reading
  and writing, busy time and flushes, for the device holding the data directory (``role=data``,
  found through its mount) and every other whole disk that has done I/O since boot.
- ``process_*{group}`` for each process group of the run (``client``: the terminals and deferred
  workers; ``driver``: Maximus's parent process): CPU seconds (user, system) from
  ``/proc/PID/stat`` and the bytes the processes made the kernel read from and write to storage
  (``/proc/PID/io``). A process that has exited keeps its last reading, so group counters never
  decrease; ``processes{group}`` counts those still alive. ``process_read_bytes_total`` counts the
  reads submitted to storage. ``process_written_bytes_total`` counts the page-cache memory dirtied,
  which with large folios (recent kernels) is a whole folio for every small rewrite, far more than
  what reaches the disk: stored as read, not used for figures. ``process_read_calls_total`` and
  ``process_write_calls_total`` count the read and write system calls (``syscr``, ``syscw``), whatever they hit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from maximus import environment
from maximus.pids import CLOCK_TICKS, parse_pid_stat
from maximus.samplers.base import Reading, Sampler, SamplerUnavailable, SamplingContext

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own sector size
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
MEMORY_KINDS = {"MemTotal": "total", "MemAvailable": "available", "Cached": "page_cache", "Dirty": "dirty",
                "Writeback": "writeback"}
# /proc/PID/io's field -> (reading, unit): the bytes submitted to storage, and the read and write system calls made
PROCESS_IO = {"read_bytes": ("process_read_bytes_total", "bytes"),
              "write_bytes": ("process_written_bytes_total", "bytes"),
              "cancelled_write_bytes": ("process_cancelled_write_bytes_total", "bytes"),
              "syscr": ("process_read_calls_total", "count"), "syscw": ("process_write_calls_total", "count")}


# --- parsers: text of a /proc file in, readings out --------------------------------------------


def stat_readings(text: str) -> list[Reading]:
    """``/proc/stat``: machine CPU time per mode, CPUs online, context switches, blocked tasks."""
    readings, cpus = [], 0
    for fields in (line.split() for line in text.splitlines()):
        if not fields:
            continue
        if fields[0] == "cpu":
            readings += [Reading("cpu_seconds_total", int(v) / CLOCK_TICKS, "s", {"mode": mode})
                         for mode, v in zip(CPU_MODES, fields[1:])]
        elif fields[0].startswith("cpu"):
            cpus += 1
        elif fields[0] == "ctxt":
            readings.append(Reading("context_switches_total", int(fields[1]), "count"))
        elif fields[0] == "procs_blocked":
            readings.append(Reading("processes_blocked", int(fields[1]), "count"))
    return readings + [Reading("cpus", cpus, "count")]


def memory_readings(text: str) -> list[Reading]:
    """``/proc/meminfo``: the sizes that matter to a database, in bytes."""
    readings = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in MEMORY_KINDS:
            number, _, unit = value.strip().partition(" ")
            readings.append(Reading("memory_bytes", int(number) * (1024 if unit == "kB" else 1), "bytes",
                                    {"kind": MEMORY_KINDS[key]}))
    return readings


@dataclass(frozen=True)
class DiskLine:
    """One line of ``/proc/diskstats``: the device and its counters (the kernel's field order)."""

    major_minor: str
    name: str
    counters: tuple[int, ...]

    @property
    def has_done_io(self) -> bool:
        return self.counters[0] + self.counters[4] > 0


def parse_diskstats(text: str) -> dict[str, DiskLine]:
    """Devices by name; lines with fewer than the 11 classic counters (very old kernels) are skipped."""
    lines = {}
    for fields in (line.split() for line in text.splitlines()):
        if len(fields) >= 14:
            lines[fields[2]] = DiskLine(f"{fields[0]}:{fields[1]}", fields[2], tuple(int(v) for v in fields[3:]))
    return lines


def disk_readings(line: DiskLine, labels: Mapping[str, str]) -> list[Reading]:
    """Counters of one device (Documentation/admin-guide/iostats.rst): times are in milliseconds there."""
    c = line.counters
    readings = [Reading("disk_reads_total", c[0], "count", labels),
                Reading("disk_read_bytes_total", c[2] * SECTOR_BYTES, "bytes", labels),
                Reading("disk_read_seconds_total", c[3] / 1000, "s", labels),
                Reading("disk_writes_total", c[4], "count", labels),
                Reading("disk_written_bytes_total", c[6] * SECTOR_BYTES, "bytes", labels),
                Reading("disk_write_seconds_total", c[7] / 1000, "s", labels),
                Reading("disk_in_flight", c[8], "count", labels),
                Reading("disk_busy_seconds_total", c[9] / 1000, "s", labels)]
    if len(c) >= 17:  # kernels from 5.5 count flushes (the fsyncs that reach the device)
        readings += [Reading("disk_flushes_total", c[15], "count", labels),
                     Reading("disk_flush_seconds_total", c[16] / 1000, "s", labels)]
    return readings


@dataclass(frozen=True)
class ProcessCounters:
    started: int  # start time in ticks since boot: tells a reused pid from the process we watch
    user_s: float
    system_s: float
    io: Mapping[str, int]


def parse_pid_io(text: str) -> dict[str, int]:
    """``/proc/PID/io``: ``read_bytes``, ``write_bytes``, ``cancelled_write_bytes`` and the others."""
    pairs = (line.partition(":") for line in text.splitlines())
    return {key.strip(): int(value) for key, _, value in pairs if value.strip().isdigit()}


# --- the sampler ---------------------------------------------------------------------------------


def _read(path: Path) -> str:
    with open(path, encoding="ascii", errors="replace") as handle:
        return handle.read()


def machine_cpu_readings() -> list[Reading]:
    """This machine's ``cpu_seconds_total{mode}`` now, as the sampler reads them (a client host's, beside its
    client processes: ``driver.hosts.host.HostSampler``)."""
    readings = stat_readings(_read(environment.PROC / "stat"))
    return [reading for reading in readings if reading.name == "cpu_seconds_total"]


def read_process(pid: int, with_io: bool) -> ProcessCounters | None:
    """The counters of a live process; None once it has exited (or become a zombie)."""
    proc = environment.PROC / str(pid)
    try:
        stat = parse_pid_stat(_read(proc / "stat"))
        io = parse_pid_io(_read(proc / "io")) if with_io else {}
    except (OSError, ValueError, IndexError):
        return None
    return None if stat.state in ("Z", "X") else ProcessCounters(stat.started, stat.user_s, stat.system_s, io)


class ProcessGroup:
    """The summed counters of a fixed set of processes; an exited process keeps its last reading."""

    def __init__(self, name: str, pids: tuple[int, ...], with_io: bool) -> None:
        self.name, self.with_io = name, with_io
        self.first = {pid: counters for pid in pids if (counters := read_process(pid, with_io)) is not None}
        self.last = dict(self.first)

    def read(self) -> list[Reading]:
        alive = 0
        for pid, first in self.first.items():
            now = read_process(pid, self.with_io)
            if now is not None and now.started == first.started:
                self.last[pid], alive = _never_less(self.last[pid], now), alive + 1
        labels = {"group": self.name}
        readings = [Reading("process_cpu_seconds_total", sum(c.user_s for c in self.last.values()), "s",
                            {**labels, "mode": "user"}),
                    Reading("process_cpu_seconds_total", sum(c.system_s for c in self.last.values()), "s",
                            {**labels, "mode": "system"}),
                    Reading("processes", alive, "count", labels)]
        if self.with_io:
            readings += [Reading(name, sum(c.io.get(key, 0) for c in self.last.values()), unit, labels)
                         for key, (name, unit) in PROCESS_IO.items()]
        return readings


def _never_less(before: ProcessCounters, now: ProcessCounters) -> ProcessCounters:
    # An exiting process may report its I/O counters as zero: a counter must not go backwards.
    io = {key: max(value, before.io.get(key, 0)) for key, value in now.io.items()}
    return ProcessCounters(now.started, max(now.user_s, before.user_s), max(now.system_s, before.system_s), io)


def find_data_device(data_path: Path, disks: Mapping[str, DiskLine]) -> tuple[str | None, str]:
    """The ``/proc/diskstats`` name of the device holding ``data_path``, and the filesystem type.

    The mount's device number finds the line (a partition has its own); when it is anonymous (btrfs
    subvolumes, for example) the mount's source name is tried. None when no block device is behind
    the path (tmpfs, overlay, NFS).
    """
    mounts = environment.parse_mountinfo(environment.read_text(environment.PROC / "self/mountinfo"))
    mount = environment.find_mount(environment.nearest_existing(data_path), mounts)
    if mount is None:
        return None, ""
    by_number = [name for name, line in disks.items() if line.major_minor == mount.major_minor]
    by_source = Path(mount.source).name
    return (by_number[0] if by_number else by_source if by_source in disks else None), mount.fstype


def whole_disks_with_io(disks: Mapping[str, DiskLine]) -> list[str]:
    """Whole disks (listed in ``/sys/block``) that have done any I/O since boot: idle loop devices are noise."""
    try:
        whole = set(os.listdir(environment.SYS / "block"))
    except OSError:
        return []
    return sorted(name for name, line in disks.items() if name in whole and line.has_done_io)


class OsSampler(Sampler):
    """Machine, disks, memory and the run's process groups (see the module's docstring)."""

    source = "os"

    def __init__(self, data_path: Path) -> None:
        self.data_path = Path(data_path)
        self.devices: dict[str, dict[str, str]] = {}  # diskstats name -> labels
        self.groups: list[ProcessGroup] = []

    def open(self, context: SamplingContext) -> list[str]:
        if not (environment.PROC / "stat").exists():
            raise SamplerUnavailable(f"no {environment.PROC / 'stat'}: the OS sampler needs Linux")
        disks = parse_diskstats(_read(environment.PROC / "diskstats"))
        data, fstype = find_data_device(self.data_path, disks)
        self.devices = {name: {"device": name} for name in whole_disks_with_io(disks)}
        notes = []
        if data is None:
            notes.append(f"no block device behind {self.data_path} ({fstype or 'unknown filesystem'}): "
                         "its disk figures are unavailable")
        else:
            self.devices[data] = {"device": data, "role": "data"}
        with_io = _io_readable(context.groups)
        if not with_io:
            notes.append("per-process I/O counters (/proc/PID/io) are not readable: the I/O cross-checks are "
                         "skipped")
        self.groups = [ProcessGroup(name, pids, with_io) for name, pids in context.groups.items()]
        return notes

    def read(self) -> list[Reading]:
        readings = stat_readings(_read(environment.PROC / "stat"))
        readings += memory_readings(_read(environment.PROC / "meminfo"))
        disks = parse_diskstats(_read(environment.PROC / "diskstats"))
        for name, labels in self.devices.items():
            if name in disks:
                readings += disk_readings(disks[name], labels)
        for group in self.groups:
            readings += group.read()
        return readings


def _io_readable(groups: Mapping[str, tuple[int, ...]]) -> bool:
    pids = [pid for members in groups.values() for pid in members]
    try:
        return bool(pids) and bool(parse_pid_io(_read(environment.PROC / str(pids[0]) / "io")))
    except OSError:
        return False
