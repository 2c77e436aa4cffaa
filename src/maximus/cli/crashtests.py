"""``maximus crashtest``'s live view: each cycle as it starts, the acknowledged commits counting up to the crash, and
each verdict as it is stored."""

from __future__ import annotations

from rich.console import Console
from rich.status import Status

from maximus import api

_VERDICT_STYLE = {"durable": "green", "lost": "yellow", "inconsistent": "red"}


class CrashProgress:
    """A ``CrashObserver`` on the console: a spinner with the live count, then a line per cycle."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.status: Status | None = None
        self.number, self.total, self.crash_at = 0, 0, 0.0

    def cycle(self, number: int, total: int, crash_at_s: float) -> None:
        self.number, self.total, self.crash_at = number, total, crash_at_s
        self._status(f"crash {number}/{total}: restoring the pristine database")

    def tick(self, elapsed_s: float, acknowledged: int) -> None:
        self._status(f"crash {self.number}/{self.total}: {acknowledged:,} outcomes acknowledged, the crash in "
                     f"{max(self.crash_at - elapsed_s, 0):.1f} s")

    def verdict(self, test_id: int, test: api.CrashTest) -> None:
        self.stop()
        findings = test.findings
        verdict = test.verdict.value
        lost = f", {len(findings.lost):,} lost" if findings.lost else ""
        recovery = f"recovered in {test.recovery_s:.1f} s" if test.recovery_s is not None else "did not come back"
        failed = [check.description for check in (*findings.checks, *test.checks) if check.passed is False]
        self.console.print(
            f"crash {self.number}/{self.total} ({test.mode.value}, at {test.crashed_at_s:.1f} s, seed {test.seed}): "
            f"[{_VERDICT_STYLE[verdict]}]{verdict}[/], {findings.acknowledged:,} acknowledged commits{lost}; "
            f"{recovery} [dim](crash test {test_id})[/]", highlight=False)
        for description in failed:
            self.console.print(f"  [red]failed:[/] {description}", highlight=False)

    def stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def _status(self, text: str) -> None:
        if self.status is None:
            self.status = self.console.status(text)
            self.status.start()
        else:
            self.status.update(text)
