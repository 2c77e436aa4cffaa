"""The cut itself: seeded (the same seed gives a byte-identical backing directory, another seed another one), the end
of serving, and unmounting that leaves nothing mounted, even when a process holds a file or the file system's own
process was killed."""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from maximus.durability.mount import FSNAME, PowerCutError, PowerCutMount, is_mounted, mounted

from .files import fsync_directory, tree_digest, write_durably, write_pending


def _busy_scenario(root: Path) -> None:
    """A fixed history of durable and pending changes: data, truncations and directory changes."""
    (root / "db").mkdir()
    fsync_directory(root)
    for index in range(6):
        write_durably(root / "db" / f"table-{index}", bytes([index]) * 9000)
    for index in range(6):
        write_pending(root / "db" / f"table-{index}", bytes([index + 100]) * 700, offset=index * 1500)
        write_pending(root / "db" / f"table-{index}", b"end", offset=9000 + index)
    os.truncate(root / "db" / "table-0", 100)
    os.rename(root / "db" / "table-1", root / "db" / "renamed")
    os.unlink(root / "db" / "table-2")
    (root / "db" / "sub").mkdir()
    write_pending(root / "db" / "sub" / "new", b"fresh" * 300)


def _crash_state(tmp_path: Path, name: str, seed: int) -> str:
    backing, mountpoint = tmp_path / name / "backing", tmp_path / name / "mnt"
    backing.mkdir(parents=True), mountpoint.mkdir()
    with PowerCutMount(backing, mountpoint) as layer:
        _busy_scenario(layer.mountpoint)
        layer.cut(seed, remount=False)
    return tree_digest(backing)


def test_the_same_seed_gives_a_byte_identical_backing_directory(tmp_path: Path) -> None:
    assert _crash_state(tmp_path, "first", seed=7) == _crash_state(tmp_path, "again", seed=7)


def test_different_seeds_give_different_crash_states(tmp_path: Path) -> None:
    states = {_crash_state(tmp_path, f"seed-{seed}", seed) for seed in (7, 8, 9)}
    assert len(states) == 3


def test_after_the_cut_the_mount_is_gone_and_nothing_is_mounted(layer: PowerCutMount) -> None:
    write_pending(layer.mountpoint / "file", b"x")
    layer.cut(seed=3, remount=False)
    assert not is_mounted(layer.mountpoint)
    assert str(layer.mountpoint) not in mounted(FSNAME)
    assert ".maximus-powercut-stash" not in os.listdir(layer.backing)
    with pytest.raises(PowerCutError):
        layer.stats()


def test_a_process_holding_a_file_gets_errors_after_the_cut_and_the_mount_still_goes(layer: PowerCutMount) -> None:
    fd = os.open(layer.mountpoint / "file", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        layer.cut(seed=3, remount=False)  # busy: unmounted lazily
        assert not is_mounted(layer.mountpoint)
        with pytest.raises(OSError) as failed:
            os.pwrite(fd, b"after the cut", 0)
        assert failed.value.errno in (errno.EIO, errno.ENOTCONN)
    finally:
        with contextlib.suppress(OSError):  # its flush fails too: the file system is gone
            os.close(fd)


def test_every_operation_fails_with_eio_once_cut(backing: Path, mountpoint: Path) -> None:
    """Between the cut and the unmount a server still running must see a dead disk, not the crash state."""
    script = ("import os, sys, time\n"
              "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
              "print('open', flush=True)\n"
              "sys.stdin.readline()\n"
              "try:\n    os.pwrite(fd, b'late', 0)\n    print('written')\n"
              "except OSError as error:\n    print(error.errno)\n")
    with PowerCutMount(backing, mountpoint) as layer:
        holder = subprocess.Popen([sys.executable, "-c", script, str(mountpoint / "file")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "open\n"
            layer.crash(seed=1)  # not unmounted yet
            answer, _ = holder.communicate("go\n", timeout=30)
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()
    assert answer.strip() == str(errno.EIO)


def test_the_mount_is_put_back_when_the_with_block_fails(backing: Path, mountpoint: Path) -> None:
    with pytest.raises(RuntimeError):
        with PowerCutMount(backing, mountpoint):
            write_pending(mountpoint / "file", b"x")
            raise RuntimeError("the test failed")
    assert not is_mounted(mountpoint)
    assert (backing / "file").read_bytes() == b"x"  # a clean unmount keeps everything


def test_a_killed_file_system_process_is_still_unmounted(layer: PowerCutMount) -> None:
    assert layer.pid is not None
    os.kill(layer.pid, signal.SIGKILL)
    os.waitpid(layer.pid, 0)
    assert is_mounted(layer.mountpoint)  # the kernel keeps a dead mount until it is unmounted
    layer.unmount()
    assert not is_mounted(layer.mountpoint)


def test_mounting_over_a_mount_point_in_use_is_refused(layer: PowerCutMount, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    with pytest.raises(PowerCutError, match="already a mount point"):
        PowerCutMount(tmp_path / "other", layer.mountpoint).mount()


def test_importing_the_api_imports_no_fuse_binding() -> None:
    code = "import sys, maximus.durability.mount; print('pyfuse3' in sys.modules, 'trio' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "False"], done.stderr


def test_an_entry_belongs_to_the_user_who_made_it(tmp_path: Path) -> None:
    """As root the layer mounts with allow_other and gives a new entry to its maker, as a local file system does:
    PostgreSQL, run as its own user, checks that its data directory is its own."""
    nobody = pwd.getpwnam("nobody")
    shared = Path(tempfile.mkdtemp(prefix="maximus-powercut-test-"))  # traversable by nobody, unlike tmp_path
    try:
        shared.chmod(0o755)
        for directory in ("backing", "mnt"):
            (shared / directory).mkdir()
        (shared / "backing").chmod(0o777)  # the mount's root, writable by anyone
        with PowerCutMount(shared / "backing", shared / "mnt") as layer:
            made = subprocess.run(["runuser", "-u", "nobody", "--", "mkdir", "-m", "700",
                                   str(layer.mountpoint / "data")], capture_output=True, text=True, timeout=60)
            assert made.returncode == 0, made.stderr
            assert (layer.mountpoint / "data").stat().st_uid == nobody.pw_uid
        assert (shared / "backing" / "data").stat().st_uid == nobody.pw_uid
        assert not is_mounted(shared / "mnt")
    finally:
        shutil.rmtree(shared)


def test_a_sync_makes_everything_pending_durable_so_a_cut_takes_nothing_back(tmp_path: Path) -> None:
    backing, mountpoint = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir(), mountpoint.mkdir()
    with PowerCutMount(backing, mountpoint, weights=(0.0, 1.0, 0.0)) as layer:  # every pending write dropped
        _busy_scenario(layer.mountpoint)
        synced_state = tree_digest(layer.mountpoint)
        after = layer.sync()
        assert (after["pending_changes"], after["pending_namespace"]) == (0, 0)
        report = layer.cut(seed=3, remount=False)
    assert report.entries == ()
    assert tree_digest(backing) == synced_state


def test_without_a_sync_the_same_cut_drops_what_was_pending(tmp_path: Path) -> None:
    backing, mountpoint = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir(), mountpoint.mkdir()
    with PowerCutMount(backing, mountpoint, weights=(0.0, 1.0, 0.0)) as layer:
        _busy_scenario(layer.mountpoint)
        written_state = tree_digest(layer.mountpoint)
        report = layer.cut(seed=3, remount=False)
    assert report.count("dropped", True) > 0
    assert tree_digest(backing) != written_state


def _torn_state(tmp_path: Path, name: str, seed: int) -> tuple[bytes, str]:
    """A durable file of old sectors, then one pending write of new sectors over it, torn at the cut."""
    backing, mountpoint = tmp_path / name / "backing", tmp_path / name / "mnt"
    backing.mkdir(parents=True), mountpoint.mkdir()
    with PowerCutMount(backing, mountpoint, weights=(0.0, 0.0, 0.0, 1.0)) as layer:  # every pending write torn
        write_durably(layer.mountpoint / "table", b"o" * 8192)
        write_pending(layer.mountpoint / "table", b"n" * 8000, offset=100)
        report = layer.cut(seed, remount=False)
    assert [entry.fate for entry in report.entries] == ["torn"]
    return (backing / "table").read_bytes(), tree_digest(backing)


def test_a_torn_write_leaves_each_sector_old_or_new_never_garbage(tmp_path: Path) -> None:
    content, _ = _torn_state(tmp_path, "torn", seed=11)
    assert len(content) == 8192
    sectors = [content[start:start + 512] for start in range(0, 8192, 512)]
    inside = [sector[100:] if index == 0 else sector[:8100 - index * 512] if index == 15 else sector
              for index, sector in enumerate(sectors)]  # the parts of each sector the write covered
    kinds = {part[:1] for part in inside if len(set(part)) == 1}
    assert all(len(set(part)) == 1 for part in inside), "a sector holds both old and new bytes, or garbage"
    assert kinds == {b"o", b"n"}  # some sectors written, some not (16 sectors: the seed draws both)
    assert content[:100] == b"o" * 100 and content[8100:] == b"o" * 92  # outside the write: untouched


def test_the_same_seed_tears_the_same_sectors(tmp_path: Path) -> None:
    assert _torn_state(tmp_path, "first", seed=5)[1] == _torn_state(tmp_path, "again", seed=5)[1]
    assert _torn_state(tmp_path, "first-6", seed=6)[1] != _torn_state(tmp_path, "again-5", seed=5)[1]
