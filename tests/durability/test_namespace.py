"""Directory entries through the power-cut layer: a creation, rename or unlink stays pending until its directory is
fsynced, and a cut that drops it undoes it (a dropped creation takes the file's data with it)."""

from __future__ import annotations

import os

from maximus.durability.mount import CutReport, PowerCutMount

from .files import fsync_directory, write_durably

SEEDS = range(10)


def _fates(report: CutReport, kind: str) -> list[str]:
    return [entry.fate for entry in report.entries if entry.kind == kind]


def test_a_file_created_without_fsync_of_its_directory_can_vanish(layer: PowerCutMount) -> None:
    fates = []
    for seed in SEEDS:
        path = layer.mountpoint / f"new-{seed}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"data")
        os.fsync(fd)  # the data is durable, its directory entry is not
        os.close(fd)
        [fate] = _fates(layer.cut(seed), "create")
        assert path.exists() == (fate == "kept")
        if fate == "kept":
            assert path.read_bytes() == b"data"
        fates.append(fate)
    assert set(fates) == {"kept", "dropped"}, fates


def test_a_file_stays_after_fsync_of_its_directory(layer: PowerCutMount) -> None:
    for seed in SEEDS:
        write_durably(layer.mountpoint / f"new-{seed}", b"data")
        layer.cut(seed)
        assert sorted(os.listdir(layer.mountpoint)) == [f"new-{n}" for n in range(seed + 1)]


def test_a_dropped_rename_is_undone_and_its_displaced_target_comes_back(layer: PowerCutMount) -> None:
    source, target = layer.mountpoint / "wal.tmp", layer.mountpoint / "wal"
    fates = set()
    for seed in SEEDS:
        write_durably(source, b"new")
        write_durably(target, b"old")
        os.rename(source, target)
        [fate] = _fates(layer.cut(seed), "rename")
        expected = {"kept": (False, b"new"), "dropped": (True, b"old")}[fate]
        assert (source.exists(), target.read_bytes()) == expected
        if fate == "dropped":
            assert source.read_bytes() == b"new"
            os.unlink(source)
        fates.add(fate)
    assert fates == {"kept", "dropped"}


def test_a_dropped_unlink_is_undone(layer: PowerCutMount) -> None:
    path = layer.mountpoint / "journal"
    fates = set()
    for seed in SEEDS:
        write_durably(path, b"journal")
        os.unlink(path)
        [fate] = _fates(layer.cut(seed), "unlink")
        assert path.exists() == (fate == "dropped")
        if fate == "dropped":
            assert path.read_bytes() == b"journal"
        fates.add(fate)
    assert fates == {"kept", "dropped"}


def test_a_dropped_mkdir_takes_its_tree_with_it(layer: PowerCutMount) -> None:
    for seed in SEEDS:
        directory = layer.mountpoint / f"dir-{seed}"
        directory.mkdir()
        fd = os.open(directory / "file", os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"data")
        os.fsync(fd)  # its data is durable; its entry and its directory's are not
        os.close(fd)
        [fate] = _fates(layer.cut(seed), "mkdir")
        assert directory.exists() == (fate == "kept")
        if fate == "dropped":
            assert not (layer.backing / f"dir-{seed}").exists()
            return
    raise AssertionError(f"no seed of {SEEDS} dropped the mkdir")


def test_changes_become_durable_in_order_as_a_journal_commits_them(layer: PowerCutMount) -> None:
    """An fsync of one directory makes durable its changes and every change made before them."""
    (layer.mountpoint / "a").mkdir()
    (layer.mountpoint / "b").mkdir()
    (layer.mountpoint / "a" / "first").write_bytes(b"")
    (layer.mountpoint / "b" / "second").write_bytes(b"")
    (layer.mountpoint / "a" / "third").write_bytes(b"")
    fsync_directory(layer.mountpoint / "b")
    assert layer.stats()["pending_namespace"] == 1  # a/third
    for seed in SEEDS:
        layer.cut(seed)
        assert (layer.mountpoint / "a" / "first").exists() and (layer.mountpoint / "b" / "second").exists()


def test_removed_and_hidden_entries_never_show(layer: PowerCutMount) -> None:
    write_durably(layer.mountpoint / "gone", b"x")
    os.unlink(layer.mountpoint / "gone")  # moved to the stash until its directory is synced
    assert os.listdir(layer.mountpoint) == []
    assert not (layer.mountpoint / ".maximus-powercut-stash").exists()


def test_symlinks_and_hard_links_pass_through_and_can_be_dropped(layer: PowerCutMount) -> None:
    write_durably(layer.mountpoint / "file", b"x")
    os.symlink("file", layer.mountpoint / "soft")
    os.link(layer.mountpoint / "file", layer.mountpoint / "hard")
    assert os.readlink(layer.mountpoint / "soft") == "file"
    assert (layer.mountpoint / "hard").stat().st_nlink == 2
    report = layer.cut(seed=0)
    assert sorted(entry.kind for entry in report.entries) == ["link", "symlink"]
    expected = {"file"} | {name for name, kind in (("soft", "symlink"), ("hard", "link"))
                           if _fates(report, kind) == ["kept"]}
    assert set(os.listdir(layer.mountpoint)) == expected
