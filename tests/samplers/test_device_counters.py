"""The data device's counters count what reached the device: a known number of 4 KiB direct reads of a file on a loop
device's file system is counted within 1 %, on that device alone (issue #43: never a disk and its partitions)."""

from __future__ import annotations

import mmap
import os
import random
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from maximus.samplers.base import SamplingContext
from maximus.samplers.os_linux import OsSampler

READS = 2000
BLOCK = 4096


@pytest.fixture
def loop_file_system(tmp_path: Path) -> Iterator[Path]:
    """An ext4 file system on a loop device of the test's own, mounted; detached and checked after."""
    backing, mountpoint = tmp_path / "disk.img", tmp_path / "mnt"
    with open(backing, "wb") as file:
        file.truncate(96 << 20)
    device = subprocess.run(["losetup", "--find", "--show", str(backing)], check=True, capture_output=True,
                            text=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True, capture_output=True)
        mountpoint.mkdir()
        subprocess.run(["mount", device, str(mountpoint)], check=True, capture_output=True)
        try:
            yield mountpoint
        finally:
            subprocess.run(["umount", str(mountpoint)], check=True, capture_output=True)
    finally:
        subprocess.run(["losetup", "-d", device], check=True, capture_output=True)
    assert str(backing) not in subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout


def _data_reads(sampler: OsSampler) -> int:
    [reads] = [r.value for r in sampler.read() if r.name == "disk_reads_total" and r.labels.get("role") == "data"]
    return int(reads)


def test_direct_reads_on_a_loop_device_are_counted_within_one_percent(loop_file_system: Path) -> None:
    data = loop_file_system / "table"
    with open(data, "wb") as file:
        file.write(os.urandom(32 << 20))
        file.flush()
        os.fsync(file.fileno())
    sampler = OsSampler(data)
    sampler.open(SamplingContext(groups={}))
    assert [labels["device"] for labels in sampler.devices.values() if labels.get("role") == "data"][0]\
        .startswith("loop")
    buffer, draw = mmap.mmap(-1, BLOCK), random.Random(5)
    fd = os.open(data, os.O_RDONLY | os.O_DIRECT)
    try:
        before = _data_reads(sampler)
        for _ in range(READS):
            os.preadv(fd, [buffer], draw.randrange(0, (32 << 20) // BLOCK) * BLOCK)
        after = _data_reads(sampler)
    finally:
        os.close(fd)
    assert abs((after - before) - READS) <= READS // 100, f"{after - before} reads counted for {READS}"
