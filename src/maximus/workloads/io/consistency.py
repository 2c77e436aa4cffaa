"""The io table's check: the rows the build wrote are all there, ids 1..rows, each once. Nothing writes to the
table, so a difference is damage: a lost page, a file truncated, a row deleted or added by hand. Each condition is
a ``CheckResult`` under the clause "io"."""

from __future__ import annotations

from maximus.engines.base import Session
from maximus.records import CheckResult
from maximus.workloads.io.loader import IoBuild
from maximus.workloads.io.schema import META_TABLE, TABLE

CLAUSE = "io"
_COUNTED = f"SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id) FROM {TABLE}"
ROWS = f"{TABLE} has the rows the build wrote"
IDS = f"{TABLE}'s ids run from 1 to its rows, each once"


def check(session: Session, built: IoBuild) -> list[CheckResult]:
    rows, distinct, lowest, highest = session.fetchone(_COUNTED) or (0, 0, None, None)
    rows_ok = int(rows) == built.rows
    ids_ok = (int(distinct), lowest, highest) == (built.rows, 1, built.rows) and int(rows) == int(distinct)
    return [CheckResult(1, CLAUSE, ROWS, rows_ok, "" if rows_ok else f"{int(rows):,} rows, {built.rows:,} loaded"),
            CheckResult(2, CLAUSE, IDS, ids_ok, "" if ids_ok else
                        f"{int(distinct):,} distinct ids from {lowest} to {highest}, expected 1 to {built.rows:,}")]


def no_build() -> list[CheckResult]:
    missing = f"no record of a finished io build ({META_TABLE}): nothing to check against"
    return [CheckResult(1, CLAUSE, ROWS, False, missing), CheckResult(2, CLAUSE, IDS, False, missing)]
