"""The retry policy waits its back-off on the clock it is given, which a stop interrupts."""

from __future__ import annotations

import sqlite3

from maximus.driver.retry import RetryPolicy
from maximus.records import Outcome


class FakeClock:
    """Records the waits asked of it instead of sleeping; ``stop_after`` waits, it reports a stop."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.waits: list[float] = []
        self.stop_after = stop_after

    def sleep(self, seconds: float) -> bool:
        self.waits.append(seconds)
        return self.stop_after is None or len(self.waits) <= self.stop_after


def _conflicts(times: int):
    """An attempt that meets a retryable conflict ``times`` times, then commits and returns its input."""
    calls = []

    def attempt(inputs: int) -> int:
        calls.append(inputs)
        if len(calls) <= times:
            raise sqlite3.OperationalError("database is locked")
        return inputs
    return attempt, calls


def _classify(error: BaseException) -> Outcome:
    return Outcome.RETRY if "locked" in str(error) else Outcome.FAILED


def test_back_off_doubles_on_the_given_clock_and_the_transaction_commits() -> None:
    clock, (attempt, calls), rollbacks = FakeClock(), _conflicts(3), []
    result = RetryPolicy(max_attempts=5, first_backoff_s=1.0).run(attempt, 7, lambda: rollbacks.append(1), _classify,
                                                                  clock.sleep)
    assert (result.outcome, result.attempts, result.output) == (Outcome.COMMITTED, 4, 7)
    assert clock.waits == [1.0, 2.0, 4.0]  # seconds of back-off asked of the clock, none slept for real
    assert len(calls) == 4 and len(rollbacks) == 3


def test_a_stop_during_the_back_off_fails_the_transaction_with_its_conflict() -> None:
    clock, (attempt, calls) = FakeClock(stop_after=1), _conflicts(5)
    result = RetryPolicy(max_attempts=10, first_backoff_s=30.0).run(attempt, 1, lambda: None, _classify, clock.sleep)
    assert (result.outcome, result.attempts) == (Outcome.FAILED, 2) and "database is locked" in result.error
    assert clock.waits == [30.0, 60.0] and len(calls) == 2


def test_giving_up_waits_no_more() -> None:
    clock, (attempt, _) = FakeClock(), _conflicts(10)
    result = RetryPolicy(max_attempts=3, first_backoff_s=0.5).run(attempt, 1, lambda: None, _classify, clock.sleep)
    assert (result.outcome, result.attempts) == (Outcome.FAILED, 3) and clock.waits == [0.5, 1.0]
