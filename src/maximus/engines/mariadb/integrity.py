"""MariaDB's own integrity check (``Engine.integrity_check``): ``CHECK TABLE`` over every table of the database, which
for InnoDB reads every page of the table and its indexes and compares each index's entries with the table's."""

from __future__ import annotations

from maximus.engines.base import Session
from maximus.records import ENGINE_CHECK, ENGINE_CLAUSE, CheckResult

DESCRIPTION = "CHECK TABLE over every table: pages, and each index against its table"
TABLES = ("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
          " AND table_type = 'BASE TABLE' ORDER BY table_name")
KEPT = 10  # problems kept in the detail


def integrity_check(session: Session, driver_error: type[Exception]) -> list[CheckResult]:
    tables = [table for (table,) in session.fetchall(TABLES)]
    problems = [problem for table in tables for problem in _checked(session, driver_error, table)]
    return [CheckResult(ENGINE_CHECK, ENGINE_CLAUSE, DESCRIPTION, not problems, "; ".join(problems[:KEPT]))]


def _checked(session: Session, driver_error: type[Exception], table: str) -> list[str]:
    """One table at a time: a table too broken to open fails its statement, not the others'."""
    try:
        rows = session.fetchall(f"CHECK TABLE `{table}`")
    except driver_error as error:
        return [f"{table}: {error}"]
    return [f"{name}: {text}" for name, _, kind, text in rows if not _fine(kind, text)]


def _fine(kind: str, text: str) -> bool:
    """A row of CHECK TABLE's result that reports no problem: its status OK, or a note or warning (InnoDB warns, for
    instance, of a table it cannot check in a read-only server, which the status row then reports)."""
    kind = kind.lower()
    return kind in ("note", "warning", "info") or (kind == "status" and text.upper() == "OK")
