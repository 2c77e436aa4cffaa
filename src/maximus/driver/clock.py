"""Time for the driver: one monotonic clock shared by every process on the machine."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    def sleep(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return False when told to stop early."""


class SystemClock:
    """CLOCK_MONOTONIC is system-wide on Linux, so times from different processes compare directly."""

    now = staticmethod(time.monotonic)  # called twice a transaction: no Python frame of its own

    def __init__(self, stop_event=None) -> None:
        self._stop = stop_event

    def sleep(self, seconds: float) -> bool:
        if seconds <= 0:
            return not (self._stop is not None and self._stop.is_set())
        if self._stop is None:
            time.sleep(seconds)
            return True
        return not self._stop.wait(seconds)
