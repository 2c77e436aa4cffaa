"""Crash tests built by hand, as the run side stores them (records.CrashTest): the read side's tests need no crash."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from maximus.records import CheckResult, CrashMode, CrashTest, DurabilityFindings, Verdict

PASSED = CheckResult(1, "3.3.2.1", "W_YTD = sum(D_YTD)", True, "")
FAILED = CheckResult(3, "3.3.2.3", "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER", False,
                     "district 1 of warehouse 1: 3 rows, expected 4")


def crash_test(verdict: Verdict = Verdict.DURABLE, mode: CrashMode = CrashMode.POWER, lost: int = 0,
               knobs: dict[str, str] | None = None, **changes: Any) -> CrashTest:
    """A crash test of SQLite under 4 terminals; ``lost`` acknowledged commits missing after recovery, and a failed
    consistency condition when inconsistent."""
    findings = DurabilityFindings(acknowledged=120, rolled_back=1,
                                  lost=tuple(f"new_order w1 d{n % 10 + 1} o{3000 + n}" for n in range(lost)),
                                  checks=(PASSED,))
    checks = (PASSED, FAILED) if verdict is Verdict.INCONSISTENT else (PASSED,)
    test = CrashTest(engine="sqlite", knobs={"synchronous": "full"} if knobs is None else knobs, workload="tpcc",
                     settings={"warehouses": 1, "keying": False, "mix": "deck"}, terminals=4, mode=mode, seed=7,
                     verdict=verdict, findings=findings, checks=checks, recovery_s=0.25, crashed_at_s=3.5,
                     window="none documented: every commit is synced" if mode is CrashMode.POWER else "")
    return replace(test, **changes)
