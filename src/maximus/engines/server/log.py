"""A server's log, read from where one start of the server began: what that start said, not the runs' before it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

from maximus.engines import _process


def size(path: Path | str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


class ServerLog:
    """The log at ``path`` from ``offset`` on. ``message`` takes a line's words without its time stamp and level,
    as the engine writes them (``could not ...`` of ``2026-11-25 01:52:34.604 UTC [10615] PANIC:  could not ...``);
    ``is_error`` tells a line that says why the server stopped or would not start."""

    def __init__(self, path: Path | str, message: Callable[[str], str], is_error: Callable[[str], bool],
                 offset: int = 0) -> None:
        self.path, self.message, self.is_error, self.offset = path, message, is_error, offset

    def begin(self) -> None:
        """From now on: the log accumulates over starts, and what the next one says begins here."""
        self.offset = size(self.path)

    def lines(self) -> list[str]:
        return _process.log_since(self.path, self.offset)

    def says(self, marks: Sequence[str]) -> str | None:
        """The words of the first line with one of ``marks``."""
        return next((self.message(line) for line in self.lines() if any(mark in line for mark in marks)), None)

    def first_error(self) -> str:
        """Why a start failed: the first error line, else the last line."""
        return first_error(self.lines(), self.message, self.is_error)


def first_error(lines: Sequence[str], message: Callable[[str], str], is_error: Callable[[str], bool]) -> str:
    """The words of the first error among ``lines``, else of their last line (a setting a server refuses before its
    logging starts may be written without a level)."""
    said = [line for line in lines if line.strip()]
    errors = [line for line in said if is_error(line)]
    if errors:
        return message(errors[0])
    return message(said[-1]) if said else "the server log says nothing"
