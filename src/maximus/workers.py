"""What every worker process Maximus spawns (a loader's, a run's terminals) does first."""

from __future__ import annotations

import ctypes
import ctypes.util
import signal

_PR_SET_PDEATHSIG = 1  # prctl(2)


def ignore_interrupts() -> None:
    """Workers leave Ctrl-C to the parent, which stops them in order (a run keeps their samples) and
    says what happened in one line; a worker's own KeyboardInterrupt would print its traceback.

    They also die with the parent: a parent killed outright (SIGKILL) must not leave terminals
    hammering the database, or loaders writing into it, behind it.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the workers end with their parent's work anyway
        pass
