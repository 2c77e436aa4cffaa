"""One root error. A user error carries a one-line message and an exit code; a traceback means a bug."""

from __future__ import annotations

from typing import Sequence


class MaximusError(Exception):
    """Root of every error Maximus raises on purpose."""

    exit_code: int = 1


class UserError(MaximusError):
    """Bad input from the user (unknown knob, bad value, bad option): one line, exit code 2."""

    exit_code = 2


class EngineError(MaximusError):
    """The database engine failed in a way the user must act on (server will not start, file locked)."""

    exit_code = 3


class ConsistencyError(MaximusError):
    """A TPC-C consistency condition (clause 3.3.2) failed."""

    exit_code = 4


def cause(errors: Sequence[str]) -> str:
    """A failed run's cause: the first line of its first error (a worker's traceback may follow it)."""
    return errors[0].strip().splitlines()[0] if errors and errors[0].strip() else "no error recorded"


def describe(error: BaseException) -> str:
    """An exception as a transaction's sample stores its error: ``Type: message``."""
    return f"{type(error).__name__}: {error}"
