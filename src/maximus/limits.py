"""The range of every number Maximus takes, checked before anything runs, and how long a plan will take.

The ranges are documented in docs/when-things-go-wrong.md ("Limits"). A number outside its range is a
one-line error: nan and infinities are never a setting, and a typo such as ``-w 99999999999`` must not start
a build that would fill the disk. A plan that takes longer than ``CONFIRM_ABOVE_S`` needs ``--yes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from maximus.errors import UserError

DAY_S = 86_400.0
LARGEST_INTEGER = 2**63 - 1  # SQLite's: run and experiment numbers and seeds are stored as such
CONFIRM_ABOVE_S = DAY_S  # a plan estimated to take longer needs --yes
LARGEST_PLAN = 10_000  # runs of one experiment
# An estimate, not a promise, per unit of a workload's scale: TPC-C's builds took 2 s a warehouse on SQLite and
# about 1.2 s on PostgreSQL on two cores; restoring the pristine copy, starting a server and the consistency
# check take seconds more a run.
BUILD_S_PER_SCALE = 3.0
RUN_OVERHEAD_S = 5.0
RUN_OVERHEAD_S_PER_SCALE = 1.0
CRASH_OVERHEAD_S = 8.0  # a crash cycle's restore, restart, consistency conditions and integrity check at 1 warehouse


@dataclass(frozen=True)
class Limit:
    """A documented range of finite numbers: integers, or (``noun``) seconds or a percentage."""

    low: float
    high: float
    noun: str = ""  # what a number that need not be whole counts: "number of seconds"
    positive: bool = False  # above ``low``, not from it

    @property
    def whole(self) -> bool:
        return not self.noun

    def allows(self, value: object) -> bool:
        if isinstance(value, bool) or not isinstance(value, int if self.whole else (int, float)):
            return False
        if not math.isfinite(value):
            return False
        return (value > self.low if self.positive else value >= self.low) and value <= self.high

    def describe(self) -> str:
        if self.whole:
            return f"an integer of at least {self.low:,} and at most {self.high:,}"
        days = f" ({self.high / DAY_S:g} days)" if self.noun == SECONDS else ""
        return f"{'a positive' if self.positive else 'a non-negative'} {self.noun}, at most {self.high:,.0f}{days}"


SECONDS = "number of seconds"
TERMINALS = Limit(1, 10_000)  # also each client count of an experiment
HOSTS = Limit(1, 1_000)  # client hosts of one run, the nodes of a Ray cluster (--hosts)
REPEATS = Limit(1, 1_000)
SEED = Limit(0, LARGEST_INTEGER)
CRASHES = Limit(1, 10_000)  # crash cycles of one crash test
WARMUP_S = Limit(0, 30 * DAY_S, SECONDS)
DURATION_S = Limit(0, 30 * DAY_S, SECONDS, positive=True)
PERCENT = Limit(0, 100, "percentage")
RATE = Limit(0, 1_000_000, "number of transactions per second", positive=True)  # a fixed-rate run's, all terminals


def check(option: str, value: object, limit: Limit) -> None:
    """A one-line ``UserError`` naming ``option`` unless ``value`` is within ``limit``."""
    if not limit.allows(value):
        raise UserError(out_of_range(option, value, limit))


def out_of_range(option: str, value: object, limit: Limit) -> str:
    return f"{option} must be {limit.describe().removeprefix('an integer of ')}, got {value}"


@dataclass(frozen=True)
class Estimate:
    """How long a plan takes: its runs (warm-up, measured window, restore and checks) and its builds."""

    runs: int
    run_s: float
    builds: int
    build_s: float
    crash_tests: int = 0  # an experiment's crash tests, after its runs
    crash_test_s: float = 0.0

    @property
    def seconds(self) -> float:
        return self.runs * self.run_s + self.builds * self.build_s + self.crash_tests * self.crash_test_s

    def text(self) -> str:
        """``about 2.6 min (6 runs of about 19 s, 3 builds of about 3 s)``."""
        parts = [f"{self.runs:,} runs of about {spoken(self.run_s)}"] if self.runs > 1 else []
        if self.builds:
            parts.append(f"{self.builds:,} build{'s' if self.builds > 1 else ''} of about {spoken(self.build_s)}")
        if self.crash_tests:
            parts.append(f"{self.crash_tests:,} crash test{'s' if self.crash_tests > 1 else ''} of about "
                         f"{spoken(self.crash_test_s)}")
        return f"about {spoken(self.seconds)}" + (f" ({', '.join(parts)})" if parts else "")

    def confirm(self, yes: bool, what: str) -> None:
        """Refuse a plan longer than ``CONFIRM_ABOVE_S`` unless the user said ``--yes``."""
        if self.seconds > CONFIRM_ABOVE_S and not yes:
            raise UserError(f"{what} would take {self.text()}, more than a day: add --yes to run it all the same")


def estimate(runs: int, builds: int, warmup_s: float, duration_s: float, scale: int) -> Estimate:
    """``scale``: the database's size in its workload's unit (TPC-C: warehouses)."""
    run_s = warmup_s + duration_s + RUN_OVERHEAD_S + RUN_OVERHEAD_S_PER_SCALE * scale
    return Estimate(runs, run_s, builds, BUILD_S_PER_SCALE * scale)


def with_crash_tests(plan: Estimate, tests: int, warmup_s: float, duration_s: float, scale: int) -> Estimate:
    """``plan`` and ``tests`` crash cycles, each a restore, its terminals until the crash (half its window on
    average), a restart and a verification that reads the whole database."""
    cycle_s = warmup_s + duration_s / 2 + CRASH_OVERHEAD_S + 2 * RUN_OVERHEAD_S_PER_SCALE * scale
    return Estimate(plan.runs, plan.run_s, plan.builds, plan.build_s, tests, cycle_s)


def spoken(seconds: float) -> str:
    """``40 s``, ``12 min``, ``3.5 h``, ``58 days``."""
    for unit, size in (("days", DAY_S), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size * (2 if unit == "days" else 1):
            return f"{seconds / size:.2g} {unit}" if seconds < 10 * size else f"{seconds / size:,.0f} {unit}"
    return f"{seconds:.0f} s"
