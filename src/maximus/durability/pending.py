"""What a power cut can lose, and how one seeded cut turns it into a crash state.

The file system passes every change through to the backing directory at once, so the backing directory always holds
the state a clean shutdown would leave. What is not durable yet is kept here, in memory:

- for each file, its *durable image* (the size at its last sync, and the durable content of every 4 KiB page that
  the backing file now holds newer, unsynced bytes for) and its pending writes and truncations, in order;
- for the whole tree, the pending directory changes (create, mkdir, unlink, rmdir, rename, link, symlink, mknod),
  each with what undoes it and what settles it once durable.

A cut restores each file's durable image, replays the pending writes and truncations a seeded generator keeps (a
garbled write puts random bytes over its 512-byte sectors, a torn one writes some of its sectors), then undoes the
directory changes the generator drops. Directory changes survive as a prefix, as a journaling file system commits
them in order. The same pending state and the same seed give the same bytes; nothing here reads a clock or an
unseeded random source. """

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable

SECTOR = 512  # the unit a garbled write spoils: what a disk writes atomically, at best
PAGE = 4096  # the unit of the durable image: a page is saved once, before its first unsynced change


class Fate(str, Enum):
    KEPT = "kept"
    DROPPED = "dropped"
    GARBLED = "garbled"  # random bytes over its sectors: a sector the disk wrote junk into
    TORN = "torn"  # each of its sectors written or not: a disk that writes a sector atomically, and no more


@dataclass(frozen=True)
class PendingWrite:
    seq: int
    offset: int
    data: bytes


@dataclass(frozen=True)
class PendingTruncate:
    seq: int
    size: int


PendingData = PendingWrite | PendingTruncate


@dataclass
class FileState:
    """One file's data as a disk may hold it: the durable image plus the changes since the last sync, in order."""

    durable_size: int
    saved_pages: dict[int, bytes] = field(default_factory=dict)
    pending: list[PendingData] = field(default_factory=list)

    def save_before_change(self, fd: int, start: int, end: int) -> None:
        """Keep the durable bytes of every page in [start, end) that the backing file is about to change."""
        if start >= self.durable_size:
            return  # bytes past the durable size have no durable content to keep
        last = min(end, self.durable_size)
        for page in range(start // PAGE, -(-last // PAGE)):
            if page not in self.saved_pages:
                length = min(PAGE, self.durable_size - page * PAGE)
                self.saved_pages[page] = os.pread(fd, length, page * PAGE)

    def record(self, change: PendingData) -> None:
        self.pending.append(change)

    def make_durable(self, size: int) -> None:
        """An fsync or fdatasync: what the backing file holds now is what a disk holds."""
        self.durable_size, self.saved_pages, self.pending = size, {}, []

    @property
    def pending_bytes(self) -> int:
        return sum(len(change.data) for change in self.pending if isinstance(change, PendingWrite)) + \
            sum(len(page) for page in self.saved_pages.values())

    def restore_durable_image(self, fd: int) -> None:
        os.ftruncate(fd, self.durable_size)
        for page, content in sorted(self.saved_pages.items()):
            os.pwrite(fd, content, page * PAGE)


@dataclass
class NamespaceChange:
    """One directory change not yet durable: the directories it touched, and how to undo or settle it."""

    seq: int
    kind: str
    description: str
    directories: frozenset[int]
    undo: Callable[[], None]
    settle: Callable[[], None]  # once durable: remove what the change moved aside (an unlinked file's stash entry)


class NamespaceLog:
    """The pending directory changes, oldest first. Like a journaling file system's log, they become durable in
    order: a directory's fsync makes durable its own changes and every change made before them."""

    def __init__(self) -> None:
        self.changes: list[NamespaceChange] = []

    def record(self, change: NamespaceChange) -> None:
        self.changes.append(change)

    def make_durable_through(self, directory: int) -> None:
        touching = [index for index, change in enumerate(self.changes) if directory in change.directories]
        if touching:
            self._settle(touching[-1] + 1)

    def make_all_durable(self) -> None:
        """A clean unmount: every change stays."""
        self._settle(len(self.changes))

    def _settle(self, count: int) -> None:
        durable, self.changes = self.changes[:count], self.changes[count:]
        for change in durable:
            change.settle()


@dataclass(frozen=True)
class FileAtCut:
    """A file with pending data, as the cut sees it: a name for the report, and a way to open it for writing."""

    name: str
    open_for_write: Callable[[], int]
    state: FileState


@dataclass(frozen=True)
class Weights:
    """How likely a pending write is kept, dropped, garbled or torn (a truncation: kept or dropped, at the same
    odds)."""

    kept: float = 1.0
    dropped: float = 1.0
    garbled: float = 1.0
    torn: float = 0.0

    def __post_init__(self) -> None:
        odds = (self.kept, self.dropped, self.garbled, self.torn)
        if min(odds) < 0 or sum(odds) <= 0:
            raise ValueError(f"weights must be at least 0 and not all 0: {self}")

    def draw(self, rng: random.Random, can_garble: bool) -> Fate:
        if not can_garble:  # a truncation; with only garbling allowed, it reached the disk
            odds = (self.kept, self.dropped) if self.kept + self.dropped > 0 else (1.0, 0.0)
            return rng.choices((Fate.KEPT, Fate.DROPPED), weights=odds)[0]
        fates = (Fate.KEPT, Fate.DROPPED, Fate.GARBLED, Fate.TORN)
        return rng.choices(fates, weights=(self.kept, self.dropped, self.garbled, self.torn))[0]


def cut(seed: int, files: Iterable[FileAtCut], namespace: NamespaceLog, weights: Weights = Weights()) -> dict[str, Any]:
    """Turn the backing directory into one crash state, drawn by ``seed``; return what was kept, dropped or garbled.

    The draws come in a fixed order (first how many directory changes survive, then each data change by its
    sequence number, with its garbage), so the same pending state and seed give the same bytes."""
    rng = random.Random(seed)
    surviving = rng.randint(0, len(namespace.changes))
    files = list(files)
    fates = _draw_data_fates(rng, files, weights)
    entries = [entry for file in files for entry in _crash_file(file, fates)]
    entries += _crash_namespace(namespace, surviving)
    entries.sort(key=lambda entry: entry["seq"])
    return {"seed": seed, "entries": entries}


def _draw_data_fates(rng: random.Random, files: list[FileAtCut],
                     weights: Weights) -> dict[int, tuple[Fate, bytes]]:
    """Each pending data change's fate by its sequence number, with the garbage a garbled write gets, or the sectors
    a torn one keeps (a byte each, 1: written)."""
    changes = sorted((change for file in files for change in file.state.pending), key=lambda change: change.seq)
    fates = {}
    for change in changes:
        fate = weights.draw(rng, can_garble=isinstance(change, PendingWrite))
        drawn = b""
        if fate is Fate.GARBLED:
            drawn = rng.randbytes(_sector_span(change)[1] - _sector_span(change)[0])
        elif fate is Fate.TORN:
            drawn = bytes(rng.getrandbits(1) for _ in range(len(_sectors(change))))
        fates[change.seq] = (fate, drawn)
    return fates


def _sector_span(write: PendingData) -> tuple[int, int]:
    """The 512-byte sectors a write touches: [first sector's start, last sector's end)."""
    assert isinstance(write, PendingWrite)
    end = write.offset + len(write.data)
    return write.offset // SECTOR * SECTOR, -(-end // SECTOR) * SECTOR


def _sectors(write: PendingData) -> list[tuple[int, int]]:
    """The parts of a write each 512-byte sector holds, as [start, end) offsets into its data."""
    assert isinstance(write, PendingWrite)
    start, end = _sector_span(write)
    bounds = [write.offset, *range(start + SECTOR, end, SECTOR), write.offset + len(write.data)]
    return [(low - write.offset, high - write.offset) for low, high in zip(bounds, bounds[1:])]


def _crash_file(file: FileAtCut, fates: dict[int, tuple[Fate, bytes]]) -> list[dict[str, Any]]:
    fd = file.open_for_write()
    try:
        file.state.restore_durable_image(fd)
        return [_replay(fd, file.name, change, *fates[change.seq]) for change in file.state.pending]
    finally:
        os.close(fd)


def _replay(fd: int, name: str, change: PendingData, fate: Fate, garbage: bytes) -> dict[str, Any]:
    if isinstance(change, PendingTruncate):
        if fate is Fate.KEPT:
            os.ftruncate(fd, change.size)
        return {"seq": change.seq, "kind": "truncate", "file": name, "size": change.size, "fate": fate.value}
    if fate is Fate.KEPT:
        os.pwrite(fd, change.data, change.offset)
    elif fate is Fate.GARBLED:
        _write_garbage(fd, change, garbage)
    elif fate is Fate.TORN:
        for (low, high), written in zip(_sectors(change), garbage):
            if written:
                os.pwrite(fd, change.data[low:high], change.offset + low)
    return {"seq": change.seq, "kind": "write", "file": name, "offset": change.offset, "length": len(change.data),
            "fate": fate.value}


def _write_garbage(fd: int, write: PendingWrite, garbage: bytes) -> None:
    """Random bytes over the write's sectors, but not past the size the write itself would leave the file at: a
    torn write spoils whole sectors, and a file's size is what its last change made it."""
    start, _ = _sector_span(write)
    size_after = max(os.fstat(fd).st_size, write.offset + len(write.data))
    os.pwrite(fd, garbage[:max(0, size_after - start)], start)


def _crash_namespace(namespace: NamespaceLog, surviving: int) -> list[dict[str, Any]]:
    """Undo the dropped changes, newest first (the exact reverse of their history, so each undo finds the tree as
    its change left it), then settle the kept ones."""
    kept, dropped = namespace.changes[:surviving], namespace.changes[surviving:]
    for change in reversed(dropped):
        change.undo()
    namespace._settle(surviving)
    namespace.changes = []
    return [{"seq": change.seq, "kind": change.kind, "file": change.description,
             "fate": (Fate.KEPT if index < surviving else Fate.DROPPED).value}
            for index, change in enumerate(kept + dropped)]
