"""A fixed-throughput schedule (issue #45): when each terminal's transactions should start, whatever the database does.

Closed-loop terminals wait for each answer before they send the next request, so a database that stalls for five
seconds shows one slow transaction per terminal, not the hundreds the stall held back (coordinated omission). Here
every transaction gets its intended start from an open-loop schedule fixed before the run; a terminal that is
behind starts the next one at once, and its latency is measured from the intended start.

The rate is shared by the terminals: each runs its own schedule at ``rate / terminals``. Regular arrivals interleave
the terminals' starts evenly; Poisson arrivals draw each terminal's gaps from an exponential distribution, seeded by
the run's seed and the terminal, so the merged arrivals are a Poisson process of the whole rate and a run repeats.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

ARRIVALS = ("regular", "poisson")


@dataclass(frozen=True)
class RateSchedule:
    rate: float  # transactions per second over all terminals
    arrivals: str  # one of ARRIVALS
    terminals: int
    seed: int

    def starts(self, terminal: int, origin: float) -> Iterator[float]:
        """One terminal's intended starts, in the clock's time, from ``origin`` on, endlessly."""
        share = self.rate / self.terminals
        if self.arrivals == "regular":
            first = origin + terminal / self.rate  # terminal n starts n / rate after terminal 0: evenly interleaved
            return (first + k / share for k in range(1 << 62))
        return _poisson(origin, share, random.Random(f"rate/{self.seed}/{terminal}"))

    @staticmethod
    def skip(starts: Iterator[float], first: float, end: float, origin: float) -> tuple[Counter[int], float]:
        """Skip a terminal's intended starts before ``end``, ``first`` and those ``starts`` gives after it: how many
        were skipped in each second from ``origin``, and the first one at or after ``end``."""
        skipped: Counter[int] = Counter()
        point = first
        while point < end:
            skipped[int(point - origin)] += 1
            point = next(starts)
        return skipped, point


def _poisson(origin: float, share: float, draws: random.Random) -> Iterator[float]:
    point = origin
    while True:
        point += draws.expovariate(share)
        yield point

