"""Retry policy: what happens when the engine reports a conflict (busy, serialization, deadlock)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from maximus.errors import describe
from maximus.records import Outcome, RollbackByRule


class Result(NamedTuple):
    """What became of one business transaction, after any retries."""

    outcome: Outcome
    attempts: int
    error: str = ""  # the last error's text, for a failed one
    output: Any = None  # what its last attempt returned: a deferred transaction's result record (2.7.2.3)


@dataclass(frozen=True)
class RetryPolicy:
    """Retry conflicts a few times with exponential backoff; everything else fails at once."""

    max_attempts: int = 10
    first_backoff_s: float = 0.001

    def run(self, attempt: Callable[[Any], Any], inputs: Any, rollback: Callable[[], None],
            classify: Callable[[BaseException], Outcome], sleep: Callable[[float], Any] = time.sleep) -> Result:
        """Run ``attempt(inputs)`` until it commits. The back-off waits in ``sleep``: the terminal's clock, which
        a stop interrupts (it returns False, and the transaction fails with its conflict)."""
        for number in range(1, self.max_attempts + 1):
            try:
                return Result(Outcome.COMMITTED, number, "", attempt(inputs))
            except RollbackByRule:
                _quietly(rollback)
                return Result(Outcome.ROLLED_BACK, number)
            except Exception as error:  # classified below: a failure is counted, never swallowed
                _quietly(rollback)
                wait = self.backoff(error, number, classify)
                if wait is None or sleep(wait) is False:
                    return failed(error, number)
        raise AssertionError("unreachable")

    def backoff(self, error: BaseException, attempts: int,
                classify: Callable[[BaseException], Outcome]) -> float | None:
        """Seconds to wait before trying again after ``attempts`` ended in ``error``; None when the
        policy gives up (not a conflict, or no attempt left). For drivers that cannot wait in a sleep."""
        if classify(error) is not Outcome.RETRY or attempts >= self.max_attempts:
            return None
        return self.first_backoff_s * 2 ** (attempts - 1)


def failed(error: BaseException, attempts: int) -> Result:
    """The result of a transaction the policy gave up on: counted with its error, never swallowed."""
    return Result(Outcome.FAILED, attempts, describe(error))


def _quietly(action: Callable[[], None]) -> None:
    try:
        action()
    except Exception:  # the connection may be gone; the original error is what gets reported
        pass
