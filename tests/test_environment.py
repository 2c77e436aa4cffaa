"""Tests for the environment fingerprint: the real machine, the parsers, and graceful degradation."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

import maximus
from maximus import environment
from maximus.environment import Mount

ESCAPED_LINE = (
    "36 35 98:0 /mnt1 /mnt/my\\040data\\011dir rw,noatime master:1 - ext3 /dev/my\\040disk rw,errors=continue"
)


def _findmnt(column: str, target: Path) -> str | None:
    """What findmnt reports for ``target``, or None when findmnt is unavailable."""
    if shutil.which("findmnt") is None:
        return None
    result = subprocess.run(
        ["findmnt", "-n", "-o", column, "--target", str(target)], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def _mount(mount_point: str, major_minor: str = "8:1") -> Mount:
    return Mount(major_minor, mount_point, "rw", "ext4", "/dev/sda1", "rw")


# --- the real machine -------------------------------------------------------------------------


@pytest.fixture
def fp(tmp_path: Path) -> dict:
    return environment.fingerprint(tmp_path, "sqlite", "3.40.1")


def test_host_section_matches_python_and_platform(fp: dict) -> None:
    assert fp["host"]["kernel"] == platform.release()
    assert fp["host"]["machine"] == platform.machine()
    assert fp["host"]["python_version"] == platform.python_version()
    assert fp["host"]["maximus_version"] == maximus.__version__
    assert fp["engine"] == {"name": "sqlite", "version": "3.40.1"}


def test_cpu_and_memory_are_read(fp: dict) -> None:
    assert fp["cpu"]["logical_cores"] == os.cpu_count()
    assert isinstance(fp["memory"]["total_bytes"], int)
    assert fp["memory"]["total_bytes"] > 0


def test_captured_at_is_utc_iso8601(fp: dict) -> None:
    from datetime import datetime, timedelta

    captured = datetime.fromisoformat(fp["captured_at"])
    assert captured.utcoffset() == timedelta(0)


def test_filesystem_type_matches_findmnt(tmp_path: Path, fp: dict) -> None:
    fstype = fp["storage"]["fstype"]
    assert isinstance(fstype, str) and fstype
    expected = _findmnt("FSTYPE", tmp_path)
    if expected is None:
        pytest.skip("findmnt not installed")
    assert fstype == expected
    assert fp["storage"]["mount_point"] == _findmnt("TARGET", tmp_path)


def test_round_trips_through_json(fp: dict) -> None:
    assert json.loads(json.dumps(fp)) == fp


def test_missing_data_path_uses_nearest_existing_parent(tmp_path: Path, fp: dict) -> None:
    missing = tmp_path / "not" / "yet" / "created"
    storage = environment.fingerprint(missing, "sqlite", "3.40.1")["storage"]
    assert storage["data_path"] == str(missing)
    assert storage["resolved_path"] == str(tmp_path.resolve())
    for key in ("mount_point", "fstype", "device", "mount_options"):
        assert storage[key] == fp["storage"][key]
    assert storage["mount_point"]


def test_tunables_are_read_on_linux(fp: dict) -> None:
    if not Path("/proc/sys/vm/dirty_ratio").exists():
        pytest.skip("no /proc/sys/vm")
    tunables = fp["kernel_tunables"]
    assert tunables["vm_dirty_ratio"] == Path("/proc/sys/vm/dirty_ratio").read_text().strip()
    assert tunables["vm_swappiness"].isdigit()


# --- parsers ----------------------------------------------------------------------------------


def test_mountinfo_line_with_escaped_path() -> None:
    mount = environment.parse_mountinfo_line(ESCAPED_LINE)
    assert mount == Mount(
        major_minor="98:0",
        mount_point="/mnt/my data\tdir",
        options="rw,noatime",
        fstype="ext3",
        source="/dev/my disk",
        super_options="rw,errors=continue",
    )


def test_mountinfo_line_without_optional_fields() -> None:
    mount = environment.parse_mountinfo_line("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard")
    assert mount is not None
    assert (mount.mount_point, mount.fstype, mount.source) == ("/", "ext4", "/dev/vda")


@pytest.mark.parametrize("line", ["", "garbage", "1 2 3:4 / /x rw shared:1 ext4 /dev/x rw"])
def test_malformed_mountinfo_lines_are_skipped(line: str) -> None:
    assert environment.parse_mountinfo_line(line) is None
    assert environment.parse_mountinfo(line + "\n" + ESCAPED_LINE)[0].fstype == "ext3"


def test_unescape_backslash() -> None:
    assert environment.unescape_mount_path("/a\\134b\\040c") == "/a\\b c"


def test_find_mount_prefers_longest_whole_component_match() -> None:
    mounts = [_mount("/"), _mount("/dev"), _mount("/data/db")]
    assert environment.find_mount(Path("/devices/x"), mounts).mount_point == "/"
    assert environment.find_mount(Path("/dev/shm"), mounts).mount_point == "/dev"
    assert environment.find_mount(Path("/data/db"), mounts).mount_point == "/data/db"
    assert environment.find_mount(Path("/data/dbx"), mounts).mount_point == "/"


def test_find_mount_later_mount_on_same_point_wins() -> None:
    mounts = [_mount("/"), _mount("/data", "8:1"), _mount("/data", "8:2")]
    assert environment.find_mount(Path("/data/x"), mounts).major_minor == "8:2"
    assert environment.find_mount(Path("/x"), []) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("none [mq-deadline] kyber bfq", "mq-deadline"), ("[none] mq-deadline", "none"), ("none", "none"),
     ("always [madvise] never", "madvise")],
)
def test_bracketed(text: str, expected: str) -> None:
    assert environment.bracketed(text) == expected


def test_format_bytes() -> None:
    assert environment.format_bytes(0) == "0 B"
    assert environment.format_bytes(1536) == "1.5 KiB"
    assert environment.format_bytes(25276502016) == "23.5 GiB"
    assert environment.format_bytes(None) == "unknown"


# --- block devices on a fake sysfs -----------------------------------------------------------


def _fake_sysfs(root: Path) -> None:
    """A disk vda (253:0) with partition vda1 (253:1), and a queue only on the disk."""
    disk = root / "devices/virtual/block/vda"
    (disk / "vda1").mkdir(parents=True)
    (disk / "vda1/partition").write_text("1\n")
    (disk / "queue").mkdir()
    (disk / "queue/scheduler").write_text("none [mq-deadline] kyber\n")
    (disk / "queue/rotational").write_text("0\n")
    (disk / "queue/read_ahead_kb").write_text("128\n")
    (root / "dev/block").mkdir(parents=True)
    (root / "dev/block/253:0").symlink_to(disk)
    (root / "dev/block/253:1").symlink_to(disk / "vda1")


@pytest.mark.parametrize("major_minor", ["253:0", "253:1"])
def test_partition_resolves_to_parent_disk_queue(tmp_path: Path, monkeypatch, major_minor: str) -> None:
    _fake_sysfs(tmp_path)
    monkeypatch.setattr(environment, "SYS", tmp_path)
    assert environment.queue_info(major_minor) == {
        "block_device": "vda",
        "scheduler": "mq-deadline",
        "rotational": False,
        "read_ahead_kb": 128,
    }


@pytest.mark.parametrize("major_minor", ["0:25", "", "garbage"])
def test_unresolvable_device_gives_empty_queue(tmp_path: Path, monkeypatch, major_minor: str) -> None:
    _fake_sysfs(tmp_path)
    monkeypatch.setattr(environment, "SYS", tmp_path)
    info = environment.queue_info(major_minor)
    assert info == {"block_device": "", "scheduler": "", "rotational": None, "read_ahead_kb": None}


# --- degradation and rendering ----------------------------------------------------------------


def test_without_proc_and_sys_fields_are_empty_not_errors(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(environment, "PROC", tmp_path / "no-proc")
    monkeypatch.setattr(environment, "SYS", tmp_path / "no-sys")
    monkeypatch.setattr(environment, "OS_RELEASE", tmp_path / "no-os-release")
    fp = environment.fingerprint(tmp_path, "sqlite", "3.40.1")
    assert fp["memory"] == {"total_bytes": None, "swap_total_bytes": None}
    assert fp["storage"]["mount_point"] == fp["storage"]["fstype"] == fp["storage"]["scheduler"] == ""
    assert set(fp["kernel_tunables"].values()) == {""}
    assert fp["cpu"]["governor"] == ""
    json.dumps(fp)
    assert all(label and value for label, value in environment.describe(fp))


def test_describe_rows(fp: dict) -> None:
    rows = environment.describe(fp)
    assert rows and all(isinstance(label, str) and label.strip() for label, _ in rows)
    assert all(isinstance(value, str) and value for _, value in rows)
    labels = [label for label, _ in rows]
    assert len(labels) == len(set(labels))
    table = dict(rows)
    assert table["Kernel"].startswith(platform.release())
    assert table["Engine"] == "sqlite 3.40.1"
    assert f"({fp['storage']['fstype']}, " in table["Data directory"]


def test_describe_tolerates_missing_sections() -> None:
    rows = environment.describe({})
    assert dict(rows)["Memory"] == "unknown, swap unknown"
