"""Directory changes made so that a cut can undo them: each holds a duplicate of its directories' O_PATH descriptors
(the file system may forget the inodes meanwhile), and an entry that a change removes or replaces is moved to a
hidden stash in the backing directory until the change is durable, so that a dropped change can move it back."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from maximus.durability.pending import NamespaceChange

STASH = ".maximus-powercut-stash"  # in the backing root, never listed


@dataclass(frozen=True)
class Place:
    """A directory entry: its directory's inode (the file system's number) and O_PATH descriptor, and its name."""

    directory: int
    directory_fd: int
    name: bytes
    path: str  # for the cut's report


class Stash:
    def __init__(self, backing: Path) -> None:
        """The stash starts empty: one left by a killed file system held unlinks that had gone through to the
        backing directory, the state a clean shutdown leaves."""
        stash = backing / STASH
        if stash.exists():
            shutil.rmtree(stash)
        stash.mkdir(mode=0o700)
        self.backing, self.fd = backing, os.open(stash, os.O_PATH | os.O_DIRECTORY)

    def remove(self) -> None:
        """Once every change is settled or undone, nothing is left in it."""
        os.rmdir(self.backing / STASH)

    def created(self, seq: int, kind: str, place: Place, undo: Callable[[bytes, int], None]) -> NamespaceChange:
        """A change that made an entry; ``undo(name, directory_fd)`` removes it."""
        directory = os.dup(place.directory_fd)

        def undo_in_directory() -> None:
            undo(place.name, directory)
            os.close(directory)
        return NamespaceChange(seq, kind, place.path, frozenset({place.directory}), undo_in_directory,
                               lambda: os.close(directory))

    def moved_aside(self, seq: int, kind: str, place: Place) -> NamespaceChange:
        """Unlink and rmdir: the entry goes to the stash until the change is durable."""
        stashed, directory = f"{seq}".encode(), os.dup(place.directory_fd)
        os.rename(place.name, stashed, src_dir_fd=directory, dst_dir_fd=self.fd)

        def undo() -> None:
            os.rename(stashed, place.name, src_dir_fd=self.fd, dst_dir_fd=directory)
            os.close(directory)

        def settle() -> None:
            _remove(stashed, self.fd)
            os.close(directory)
        return NamespaceChange(seq, kind, place.path, frozenset({place.directory}), undo, settle)

    def renamed(self, seq: int, source: Place, target: Place, replaces: bool) -> NamespaceChange:
        """A rename; the entry it ``replaces`` at the target waits in the stash."""
        stashed = f"{seq}".encode()
        old, new = os.dup(source.directory_fd), os.dup(target.directory_fd)
        if replaces:
            os.rename(target.name, stashed, src_dir_fd=new, dst_dir_fd=self.fd)
        os.rename(source.name, target.name, src_dir_fd=old, dst_dir_fd=new)

        def undo() -> None:
            os.rename(target.name, source.name, src_dir_fd=new, dst_dir_fd=old)
            if replaces:
                os.rename(stashed, target.name, src_dir_fd=self.fd, dst_dir_fd=new)
            _close(old, new)

        def settle() -> None:
            if replaces:
                _remove(stashed, self.fd)
            _close(old, new)
        return NamespaceChange(seq, "rename", f"{source.path} -> {target.path}",
                               frozenset({source.directory, target.directory}), undo, settle)


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def _remove(name: bytes, directory: int) -> None:
    if stat.S_ISDIR(os.lstat(name, dir_fd=directory).st_mode):
        os.rmdir(name, dir_fd=directory)
    else:
        os.unlink(name, dir_fd=directory)
