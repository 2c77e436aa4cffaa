"""File data through the power-cut layer: what a sync makes durable survives every cut; an unsynced write is kept,
dropped or garbled as the cut's report says, and garbage covers exactly the write's 512-byte sectors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maximus.durability.mount import CutReport, PowerCutMount

from .files import fsync_directory, write_durably, write_pending

SEEDS = range(8)
BASE = bytes(range(256)) * 16  # 4 KiB that no garbage reproduces by chance


def _write_fate(report: CutReport) -> str:
    [write] = [entry for entry in report.entries if entry.kind == "write"]
    return write.fate


def test_data_written_then_fsynced_survives_every_cut(layer: PowerCutMount) -> None:
    path = layer.mountpoint / "data"
    for seed in SEEDS:
        write_durably(path, BASE + seed.to_bytes(4, "big"))
        report = layer.cut(seed)
        assert path.read_bytes() == BASE + seed.to_bytes(4, "big"), report
        assert report.entries == ()  # nothing was pending


def test_an_unsynced_write_is_kept_dropped_or_garbled_as_the_report_says(layer: PowerCutMount) -> None:
    path, new = layer.mountpoint / "data", b"N" * 100
    fates = set()
    for seed in SEEDS:
        write_durably(path, BASE)
        write_pending(path, new, offset=1000)
        fate = _write_fate(layer.cut(seed))
        content = path.read_bytes()
        expected = {"kept": BASE[:1000] + new + BASE[1100:], "dropped": BASE}
        if fate == "garbled":
            assert content[:512] == BASE[:512] and content[1536:] == BASE[1536:]
            assert content[512:1536] not in (BASE[512:1536], expected["kept"][512:1536])
        else:
            assert content == expected[fate]
        fates.add(fate)
    assert fates == {"kept", "dropped", "garbled"}  # the seeds above meet each fate


def test_a_dropped_write_past_the_durable_end_leaves_the_durable_size(layer: PowerCutMount) -> None:
    path = layer.mountpoint / "grows"
    for seed in SEEDS:
        write_durably(path, BASE)
        write_pending(path, b"tail", offset=len(BASE))
        if _write_fate(layer.cut(seed)) == "dropped":
            assert path.read_bytes() == BASE
            return
    pytest.fail(f"no seed of {SEEDS} dropped the write")


def test_o_dsync_writes_survive_every_cut(layer: PowerCutMount) -> None:
    path = layer.mountpoint / "wal"
    write_durably(path, b"")
    for seed in SEEDS:
        fd = os.open(path, os.O_WRONLY | os.O_DSYNC)
        try:
            os.pwrite(fd, seed.to_bytes(1, "big") * 8192, 0)
        finally:
            os.close(fd)
        assert layer.stats()["pending_changes"] == 0
        layer.cut(seed)
        assert path.read_bytes() == seed.to_bytes(1, "big") * 8192


def test_a_truncation_without_fsync_can_be_undone(layer: PowerCutMount) -> None:
    path = layer.mountpoint / "journal"
    sizes = set()
    for seed in SEEDS:
        write_durably(path, BASE)
        os.truncate(path, 0)
        report = layer.cut(seed)
        assert [entry.kind for entry in report.entries] == ["truncate"]
        assert path.read_bytes() == (b"" if report.entries[0].fate == "kept" else BASE)
        sizes.add(path.stat().st_size)
    assert sizes == {0, len(BASE)}


def test_garbage_covers_exactly_the_sectors_of_the_write(backing: Path, mountpoint: Path) -> None:
    with PowerCutMount(backing, mountpoint, weights=(0, 0, 1)) as layer:  # every write garbled
        path = layer.mountpoint / "data"
        write_durably(path, BASE)
        write_pending(path, b"N" * 100, offset=700)  # inside the sector [512, 1024)
        write_pending(path, b"T" * 100, offset=len(BASE))  # past the end: the size it made, and no more
        report = layer.cut(seed=1)
        content = path.read_bytes()
    assert [entry.fate for entry in report.entries] == ["garbled", "garbled"]
    assert len(content) == len(BASE) + 100
    assert content[:512] == BASE[:512] and content[1024:len(BASE)] == BASE[1024:]
    garbled = content[512:1024]
    assert sum(a == b for a, b in zip(garbled, BASE[512:1024])) < 16  # random bytes match 1 in 256
    assert garbled[700 - 512:800 - 512] != b"N" * 100
    assert content[len(BASE):].count(b"T") < 16


def test_fsync_directory_does_not_make_file_data_durable(layer: PowerCutMount) -> None:
    path = layer.mountpoint / "data"
    write_durably(path, BASE)
    write_pending(path, b"N" * 10)
    fsync_directory(layer.mountpoint)
    assert layer.stats()["pending_changes"] == 1
