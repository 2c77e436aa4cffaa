"""The OS sampler: /proc parsers on known text, the data directory's device, process groups."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from maximus import environment
from maximus.samplers.base import SamplerUnavailable, SamplingContext
from maximus.samplers.os_linux import (CLOCK_TICKS, OsSampler, ProcessGroup, disk_readings, find_data_device,
                                       memory_readings, parse_diskstats, parse_pid_io, parse_pid_stat, stat_readings)

STAT = """cpu  100 5 50 1000 20 0 3 2 0 0
cpu0 50 2 25 500 10 0 1 1 0 0
cpu1 50 3 25 500 10 0 2 1 0 0
intr 12345
ctxt 987654
procs_running 2
procs_blocked 1
"""
DISKSTATS = """ 254       0 vda 100 7 4000 50 200 5 8000 300 0 400 350 0 0 0 0 60 30
 254       1 vda1 90 7 3900 45 190 5 7900 290 0 380 330 0 0 0 0 0 0
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   8       0 sda 10 0 80 5 20 0 160 9 0 12 14
"""


def _values(readings: list, name: str) -> dict:
    return {tuple(sorted(r.labels.items())): r.value for r in readings if r.name == name}


def test_proc_stat_gives_machine_cpu_seconds_per_mode_cpus_and_context_switches() -> None:
    readings = stat_readings(STAT)
    cpu = _values(readings, "cpu_seconds_total")
    assert cpu[(("mode", "user"),)] == 100 / CLOCK_TICKS and cpu[(("mode", "steal"),)] == 2 / CLOCK_TICKS
    assert len(cpu) == 8
    assert _values(readings, "cpus") == {(): 2}
    assert _values(readings, "context_switches_total") == {(): 987654}
    assert _values(readings, "processes_blocked") == {(): 1}


def test_meminfo_sizes_are_bytes() -> None:
    text = "MemTotal:       1000 kB\nMemFree: 10 kB\nCached:  300 kB\nDirty:   7 kB\nWriteback: 0 kB\n"
    memory = _values(memory_readings(text), "memory_bytes")
    assert memory == {(("kind", "total"),): 1024000, (("kind", "page_cache"),): 307200, (("kind", "dirty"),): 7168,
                      (("kind", "writeback"),): 0}


def test_diskstats_counters_in_bytes_and_seconds_with_flushes_when_the_kernel_has_them() -> None:
    disks = parse_diskstats(DISKSTATS)
    assert set(disks) == {"vda", "vda1", "loop0", "sda"} and disks["vda1"].major_minor == "254:1"
    vda = {r.name: r.value for r in disk_readings(disks["vda"], {"device": "vda"})}
    assert vda["disk_read_bytes_total"] == 4000 * 512 and vda["disk_written_bytes_total"] == 8000 * 512
    assert vda["disk_read_seconds_total"] == 0.05 and vda["disk_write_seconds_total"] == 0.3
    assert vda["disk_flushes_total"] == 60 and vda["disk_busy_seconds_total"] == 0.4
    assert "disk_flushes_total" not in {r.name for r in disk_readings(disks["sda"], {})}  # an older kernel


def test_pid_stat_survives_a_process_name_with_spaces_and_parentheses() -> None:
    fields = " ".join(str(n) for n in range(4, 53))  # field 4 onwards; utime is field 14, stime 15, starttime 22
    stat = parse_pid_stat(f"42 (a (b) c) S {fields}")  # ppid is field 4, cutime 16, cstime 17
    assert (stat.started, stat.user_s, stat.system_s, stat.state) == (22, 14 / CLOCK_TICKS, 15 / CLOCK_TICKS, "S")
    assert (stat.parent, stat.children_user_s, stat.children_system_s) == (4, 16 / CLOCK_TICKS, 17 / CLOCK_TICKS)
    assert parse_pid_io("rchar: 5\nread_bytes: 4096\nwrite_bytes: 8192\n")["write_bytes"] == 8192


def _fake_proc(tmp_path: Path, mount_line: str) -> Path:
    """A /proc with a root mount on sda1 and ``mount_line``, whose mount point is ``tmp_path/data``."""
    (tmp_path / "data").mkdir()
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                                  + mount_line.replace("/data", str(tmp_path / "data")) + "\n")
    (tmp_path / "proc/diskstats").write_text(DISKSTATS)
    (tmp_path / "proc/stat").write_text(STAT)
    return tmp_path / "proc"


@pytest.mark.parametrize("mount_line, device", [
    ("30 1 254:1 / /data rw - xfs /dev/vda1 rw", "vda1"),  # by device number
    ("30 1 0:44 / /data rw - btrfs /dev/vda1 rw", "vda1"),  # anonymous number: by the mount's source
    ("30 1 0:45 / /data rw - tmpfs tmpfs rw", None),  # no block device at all
])
def test_the_data_directory_device_is_found_through_its_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               mount_line: str, device: str | None) -> None:
    monkeypatch.setattr(environment, "PROC", _fake_proc(tmp_path, mount_line))
    assert find_data_device(tmp_path / "data" / "db", parse_diskstats(DISKSTATS))[0] == device


def test_sampler_notes_a_data_directory_without_a_block_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "PROC", _fake_proc(tmp_path, "30 1 0:45 / /data rw - tmpfs tmpfs rw"))
    notes = OsSampler(tmp_path / "data").open(SamplingContext({}))
    assert any("no block device" in note and "tmpfs" in note for note in notes)


def test_without_proc_the_sampler_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "PROC", tmp_path / "nowhere")
    with pytest.raises(SamplerUnavailable, match="needs Linux"):
        OsSampler(tmp_path).open(SamplingContext({}))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="Linux /proc needed")
def test_a_process_group_keeps_the_cpu_of_a_process_that_exited() -> None:
    burner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                               "while time.process_time() < end: pass\ninput()"],
                              stdin=subprocess.PIPE, text=True)
    group = ProcessGroup("client", (burner.pid,), with_io=True)
    deadline = time.monotonic() + 30
    while _group_cpu(group.read()) < 0.25 and time.monotonic() < deadline:  # until the burner has used its CPU
        time.sleep(0.05)
    assert _values(group.read(), "processes") == {(("group", "client"),): 1}
    burner.communicate("\n", timeout=30)
    after_exit = group.read()
    assert _group_cpu(after_exit) >= 0.25
    assert _values(after_exit, "processes") == {(("group", "client"),): 0}


def _group_cpu(readings: list) -> float:
    return sum(_values(readings, "process_cpu_seconds_total").values())
