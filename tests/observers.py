"""An experiment observer for tests: prints nothing, fails on a run that failed."""

from __future__ import annotations

from typing import Any


class Quiet:
    """An ``ExperimentObserver`` that prints nothing and fails the test at a run that ended with an error."""

    def run_starting(self, position: int, total: int, planned: Any) -> None:
        return None

    def run_finished(self, planned: Any, run_id: int | None, error: str | None) -> None:
        assert error is None, error

    def note(self, message: str) -> None:
        pass
