"""What goes wrong with a results database, as one line each: locked by another process, damaged, read-only,
or not Maximus's at all. The exit code says whose it is to fix: 2 the user's choice of file, 3 the file's state."""

from __future__ import annotations

import functools
import math
import os
import sqlite3
from pathlib import Path
from typing import Any, Callable, TypeVar

from maximus import limits
from maximus.errors import MaximusError

TIMEOUT = limits.Limit(0, limits.DAY_S, limits.SECONDS)


class ResultsUnavailable(MaximusError):
    """The results database cannot be used as asked: exit code 2 where the user chose a file Maximus may not use
    (another application's, a read-only one), 3 where it is damaged or another process keeps it locked."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def results_timeout() -> float:
    """``$MAXIMUS_RESULTS_TIMEOUT``: seconds to wait for a results database another process has locked (30)."""
    text = os.environ.get("MAXIMUS_RESULTS_TIMEOUT", "").strip()
    try:
        value = float(text) if text else 30.0
    except ValueError:
        value = math.nan
    limits.check("$MAXIMUS_RESULTS_TIMEOUT", value, TIMEOUT)
    return value


def unavailable(path: Path, error: sqlite3.Error) -> ResultsUnavailable:
    """What a failure of the results database's SQLite means to the user, in one line."""
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return ResultsUnavailable(f"the results database {path} is locked by another process (waited "
                                  f"{results_timeout():g} s): let it finish, or wait longer with "
                                  "$MAXIMUS_RESULTS_TIMEOUT", 3)
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        return ResultsUnavailable(f"the results database {path} cannot be written ({error}): make it writable, "
                                  "or choose another --results", 2)
    if code == sqlite3.SQLITE_NOTADB:
        return ResultsUnavailable(f"{path} is not a Maximus results database ({error}): choose another --results", 2)
    if code == sqlite3.SQLITE_CORRUPT:
        return ResultsUnavailable(f"the results database {path} is damaged ({error}): restore it from a backup, "
                                  "or choose another --results", 3)
    return ResultsUnavailable(f"the results database {path} failed: {error}", 3)


Method = TypeVar("Method", bound=Callable[..., Any])


def guarded(method: Method) -> Method:
    """A store method whose SQLite failures are one line naming the results database (``unavailable``)."""
    @functools.wraps(method)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            raise unavailable(self.path, error) from None
    return wrapped  # type: ignore[return-value]
