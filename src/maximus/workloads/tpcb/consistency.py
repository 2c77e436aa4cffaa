"""TPC-B's consistency check: the money agrees. Every transaction adds one delta to an account, a teller, a branch
and the history, so the four totals are equal; a lost or a doubled update shows as a difference. The rows loaded are
all still there, and a fresh build has no history and zero balances.

With pgbench's independent draws (``transaction``) a branch's balance is not the sum of its tellers', so only the
totals are compared. Each condition is a ``CheckResult`` numbered here, under the clause "TPC-B".
"""

from __future__ import annotations

from typing import Mapping

from maximus.engines.base import Session
from maximus.records import CheckResult
from maximus.workloads.tpcb.schema import META_TABLE

CLAUSE = "TPC-B"
_TOTALS = ("SELECT (SELECT COALESCE(SUM(abalance), 0) FROM accounts), "
           "(SELECT COALESCE(SUM(tbalance), 0) FROM tellers), (SELECT COALESCE(SUM(bbalance), 0) FROM branches), "
           "(SELECT COALESCE(SUM(delta), 0) FROM history), (SELECT COUNT(*) FROM history)")
_COUNTS = "SELECT (SELECT COUNT(*) FROM branches), (SELECT COUNT(*) FROM tellers), (SELECT COUNT(*) FROM accounts)"
_BALANCES = {2: ("accounts", "sum(abalance)"), 3: ("tellers", "sum(tbalance)"), 4: ("branches", "sum(bbalance)")}


def check(session: Session, expected_rows: Mapping[str, int], fresh: bool) -> list[CheckResult]:
    """The five conditions; ``expected_rows``: the rows the build wrote per table."""
    accounts, tellers, branches, history, history_rows = (int(v) for v in session.fetchone(_TOTALS) or ())
    counted = dict(zip(("branches", "tellers", "accounts"), (int(v) for v in session.fetchone(_COUNTS) or ())))
    results = [_rows_intact(counted, expected_rows)]
    for number, total in zip(_BALANCES, (accounts, tellers, branches)):
        table, what = _BALANCES[number]
        results.append(CheckResult(number, CLAUSE, f"{what} of {table} equals sum(delta) of history",
                                   total == history, "" if total == history else
                                   f"{what} = {total:,}, sum(delta) = {history:,}: {total - history:+,}"))
    return results + [_fresh_state(fresh, history_rows, (accounts, tellers, branches))]


def no_build() -> CheckResult:
    return CheckResult(1, CLAUSE, "branches, tellers and accounts have the rows the build wrote", False,
                       f"no record of a finished TPC-B build ({META_TABLE}): nothing to check against")


def _rows_intact(counted: Mapping[str, int], expected: Mapping[str, int]) -> CheckResult:
    wrong = [f"{table}: {counted[table]:,} rows, {rows:,} loaded" for table, rows in expected.items()
             if counted[table] != rows]
    return CheckResult(1, CLAUSE, "branches, tellers and accounts have the rows the build wrote", not wrong,
                       "; ".join(wrong))


def _fresh_state(fresh: bool, history_rows: int, totals: tuple[int, int, int]) -> CheckResult:
    description = "a fresh build has no history and every balance at zero"
    if not fresh:
        return CheckResult(5, CLAUSE, description, None, "skipped: applies to a freshly loaded database only")
    passed = history_rows == 0 and not any(totals)
    return CheckResult(5, CLAUSE, description, passed, "" if passed else
                       f"{history_rows:,} history rows, totals {', '.join(f'{t:,}' for t in totals)}")
