"""Helpers of the power-cut layer's tests: writes with and without syncs, and a digest of a tree."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def write_durably(path: Path, data: bytes) -> None:
    """Write, fsync the file, fsync its directory: nothing of it is pending after this."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(path.parent)


def write_pending(path: Path, data: bytes, offset: int = 0) -> None:
    """Write without any sync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def fsync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def tree_digest(root: Path) -> str:
    """Every path under ``root`` with its type and its content (a symlink's target): equal digests, equal trees."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_symlink():
            digest.update(b"link " + os.readlink(path).encode())
        elif path.is_dir():
            digest.update(b"dir")
        else:
            digest.update(b"file " + path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()
