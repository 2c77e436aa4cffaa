"""What every worker process Maximus spawns (a loader's, a run's terminals) does first, and how it is spawned."""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_PR_SET_PDEATHSIG = 1  # prctl(2)
_STOPPING = {signal.SIGINT, signal.SIGTERM}


def ignore_interrupts(termination: bool = False) -> None:
    """Workers leave Ctrl-C to the parent, which stops them in order (a run keeps their samples) and
    says what happened in one line; a worker's own KeyboardInterrupt would print its traceback.
    ``termination``: SIGTERM too, for workers the parent ends by SIGKILL (a run's terminals, whose
    samples the parent collects when a SIGTERM sent to the whole process group stops the run).

    They also die with the parent: a parent killed outright (SIGKILL) must not leave terminals
    hammering the database, or loaders writing into it, behind it.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if termination:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)  # held since the spawn (``spawning``): a pending
    _die_with_parent()  # Ctrl-C is dropped now that it is ignored


@contextmanager
def spawning() -> Iterator[None]:
    """Ctrl-C and SIGTERM held while worker processes are started. A worker inherits the mask, so one sent to
    the whole process group (a Ctrl-C at the terminal) while it imports its modules waits, and is dropped by
    ``ignore_interrupts``, instead of printing a traceback of the import in every worker; the parent gets
    its own at the end of the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies; at once if the parent died already, while this process started
    (a spawned worker imports for a second or more before it gets here), which no signal would ever tell it."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the workers end with their parent's work anyway
        return
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # adopted: the parent is gone
        os._exit(1)
