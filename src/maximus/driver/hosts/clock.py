"""A client host's clock against the coordinator's, measured by pings (Cristian's method, as NTP's clock filter
keeps its best sample): the ping with the smallest round trip bounds the offset best, since the host read its clock
somewhere within that round trip."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from maximus.client_hosts import ClockReading

PINGS = 10

# What a ping returns: the host's time.time() and time.monotonic(), read at the same moment
HostClocks = tuple[float, float]


@dataclass(frozen=True)
class ClockSync:
    """A host's clocks against the coordinator's wall clock, from its best ping."""

    reading: ClockReading  # its wall clock: the offset, its bound, the round trip
    monotonic_offset_s: float  # its CLOCK_MONOTONIC minus the coordinator's wall clock: what turns the coordinator's
    # start into the host's time origin (its wall clock may be stepped meanwhile; its monotonic clock is not)

    def host_monotonic(self, coordinator_time: float) -> float:
        """``coordinator_time`` (the coordinator's ``time.time()``) on the host's monotonic clock."""
        return coordinator_time + self.monotonic_offset_s


def synchronise(ping: Callable[[], HostClocks], pings: int = PINGS,
                now: Callable[[], float] = time.time) -> ClockSync:
    """``pings`` pings of the host (at least one); the offsets of the one with the smallest round trip."""
    round_trip, middle, (wall, monotonic) = min(_ping(ping, now) for _ in range(max(pings, 1)))
    return ClockSync(ClockReading(wall - middle, round_trip / 2, round_trip), monotonic - middle)


def _ping(ping: Callable[[], HostClocks], now: Callable[[], float]) -> tuple[float, float, HostClocks]:
    """One ping: its round trip, the coordinator's time at its middle, the host's clocks."""
    sent = now()
    clocks = ping()
    back = now()
    return back - sent, (sent + back) / 2, clocks
