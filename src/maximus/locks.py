"""Advisory locks that keep two Maximus processes off one work directory's databases, or one experiment.

A lock is ``flock`` on a file that holds the holder's pid. The kernel lets go of it when the holder ends,
however it ends (SIGKILL included), so a lock file left behind by a killed Maximus blocks nobody: the
next process takes it over. A holder removes its file when it lets go, and the directories it made for it
if they stayed empty (a command that failed at once leaves no empty work directory); a process that opened
the file just before that finds, once it holds the lock, that the name now points elsewhere, and starts
again with the new file. The descriptor is not inherited by the server and worker processes Maximus
starts, which must not keep a lock alive after Maximus has gone.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from maximus.errors import UserError


_WAIT_STEP_S = 0.2  # between two looks at a lock held by another process, while waiting for it


class Busy(UserError):
    """Another live Maximus process holds the lock: the second command is the one to wait or change."""


@contextmanager
def held(path: Path, what: str, advice: str, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the lock of ``path`` for the block; ``Busy`` names ``what`` it guards, the holder's pid and
    the ``advice``, once ``wait_s`` seconds have passed with another process holding it. A directory that cannot
    hold the file is a one-line ``UserError``."""
    path = Path(path)
    made = [directory for directory in (path.parent, *path.parent.parents) if not os.path.lexists(directory)]
    descriptor = _acquire(path, what, advice, time.monotonic() + wait_s)
    try:
        yield
    finally:
        _release(path, descriptor, made)


def _acquire(path: Path, what: str, advice: str, deadline: float) -> int:
    while True:
        descriptor = _open(path)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            if time.monotonic() < deadline:
                time.sleep(_WAIT_STEP_S)
                continue
            raise Busy(f"{what} is in use by Maximus process {holder}: {advice}") from None
        if _still_named(path, descriptor):
            break
        os.close(descriptor)  # its holder removed it between our open and our lock: take the new file
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"{os.getpid()}\n".encode())
    return descriptor


def _release(path: Path, descriptor: int, made: list[Path]) -> None:
    """Unlink the file before the lock goes (a waiter that opened it then sees it is no longer named), then
    remove the directories ``made`` for it, deepest first, as long as they are empty."""
    try:
        os.unlink(path)
    except OSError:
        pass
    os.close(descriptor)
    for directory in made:
        try:
            os.rmdir(directory)
        except OSError:
            break


def _open(path: Path) -> int:
    directory = path.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise UserError(unusable_directory(directory, error)) from None


def unusable_directory(directory: Path, error: OSError) -> str:
    """Why files cannot be made in ``directory``, in words a user acts on."""
    if error.errno in (errno.EEXIST, errno.ENOTDIR):
        file = next((p for p in (directory, *directory.parents) if os.path.lexists(p) and not os.path.isdir(p)), None)
        if file is not None:
            return f"{file} is a file, not a directory: choose a directory"
    if error.errno == errno.ENAMETOOLONG:
        return (f"the path {directory} is too long for the file system ({len(os.fsencode(directory))} bytes; a "
                "name holds at most 255): choose a shorter one")
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write in {directory} ({error.strerror}): choose a directory Maximus may write in"
    return f"cannot use {directory}: {error.strerror or error}"


def _holder(descriptor: int) -> str:
    text = os.pread(descriptor, 32, 0).decode(errors="replace").strip()
    return text if text.isdigit() else "(pid not yet written)"


def _still_named(path: Path, descriptor: int) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)
