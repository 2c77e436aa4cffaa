"""The crash model alone, on a plain file (no FUSE): a file's durable image is what it held at its last sync, whatever
mix of writes, shrinking and growing came after, and a cut that drops every change brings exactly that back."""

from __future__ import annotations

import os
from pathlib import Path

from maximus.durability.pending import (PAGE, FileAtCut, FileState, NamespaceLog, PendingTruncate, PendingWrite,
                                        Weights, cut)

DURABLE = bytes(range(251)) * 40  # 10,040 bytes: three pages, the last one partial


def _changed(path: Path, state: FileState, changes: list[tuple[str, int, bytes]]) -> None:
    """Make each change to the file as the file system does: save the durable bytes first, then change, then record."""
    fd = os.open(path, os.O_RDWR)
    try:
        for seq, (kind, offset, data) in enumerate(changes, start=1):
            current = os.fstat(fd).st_size
            if kind == "write":
                state.save_before_change(fd, offset, offset + len(data))
                os.pwrite(fd, data, offset)
                state.record(PendingWrite(seq, offset, data))
            else:
                state.save_before_change(fd, min(current, offset), max(current, offset))
                os.ftruncate(fd, offset)
                state.record(PendingTruncate(seq, offset))
    finally:
        os.close(fd)


def _cut(path: Path, state: FileState, weights: Weights) -> dict:
    return cut(1, [FileAtCut(path.name, lambda: os.open(path, os.O_RDWR), state)], NamespaceLog(), weights)


def test_dropping_every_change_brings_back_the_durable_image(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(DURABLE)
    state = FileState(durable_size=len(DURABLE))
    _changed(path, state, [("write", 100, b"a" * 50), ("truncate", 5000, b""), ("write", 9000, b"b" * 3000),
                           ("truncate", 20000, b""), ("write", PAGE - 10, b"c" * 20)])
    assert path.read_bytes() != DURABLE
    report = _cut(path, state, Weights(kept=0, dropped=1, garbled=0))
    assert {entry["fate"] for entry in report["entries"]} == {"dropped"}
    assert path.read_bytes() == DURABLE


def test_keeping_every_change_gives_what_the_program_wrote(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(DURABLE)
    state = FileState(durable_size=len(DURABLE))
    _changed(path, state, [("write", 100, b"a" * 50), ("truncate", 5000, b""), ("write", 9000, b"b" * 3000)])
    written = path.read_bytes()
    _cut(path, state, Weights(kept=1, dropped=0, garbled=0))
    assert path.read_bytes() == written


def test_a_page_is_saved_once_before_its_first_change(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(DURABLE)
    state = FileState(durable_size=len(DURABLE))
    _changed(path, state, [("write", 10, b"x"), ("write", 20, b"y"), ("write", 2 * PAGE + 5, b"z")])
    assert sorted(state.saved_pages) == [0, 2]
    assert state.saved_pages[0] == DURABLE[:PAGE] and state.saved_pages[2] == DURABLE[2 * PAGE:]
