"""PostgreSQL's own integrity check (``Engine.integrity_check``): amcheck's ``verify_heapam`` over every table of the
database's schema (pages and tuples a crash may have torn) and ``bt_index_check`` with ``heapallindexed`` over every
B-tree index (each entry in order, and every heap tuple found in its index)."""

from __future__ import annotations

from maximus.engines.base import Session
from maximus.records import ENGINE_CHECK, ENGINE_CLAUSE, CheckResult

DESCRIPTION = "amcheck: verify_heapam over every table, bt_index_check (heapallindexed) over every index"
_OF_THE_SCHEMA = ("FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                  " WHERE n.nspname = current_schema() AND c.relpersistence = 'p'")
TABLES = f"SELECT c.oid::regclass::text {_OF_THE_SCHEMA} AND c.relkind = 'r' ORDER BY 1"
INDEXES = (f"SELECT c.oid::regclass::text {_OF_THE_SCHEMA} AND c.relkind = 'i' AND c.relam ="
           " (SELECT oid FROM pg_am WHERE amname = 'btree') AND (SELECT indisvalid FROM pg_index WHERE indexrelid ="
           " c.oid) ORDER BY 1")
HEAP = "SELECT blkno, offnum, msg FROM verify_heapam(?::regclass)"
INDEX = "SELECT bt_index_check(?::regclass, true)"
KEPT = 10  # problems kept in the detail: the first of a corrupt file are enough to say which


def integrity_check(session: Session, driver_error: type[Exception]) -> list[CheckResult]:
    try:
        session.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
    except driver_error as error:  # not superuser on a server of the user's, or contrib not installed
        return [_result(None, f"amcheck cannot be installed here: {_first_line(error)}")]
    problems = [problem for (table,) in session.fetchall(TABLES)
                for problem in _checked(session, driver_error, HEAP, table)]
    problems += [problem for (index,) in session.fetchall(INDEXES)
                 for problem in _checked(session, driver_error, INDEX, index)]
    return [_result(not problems, "; ".join(problems[:KEPT]))]


def _checked(session: Session, driver_error: type[Exception], check: str, relation: str) -> list[str]:
    """The problems one check reports of ``relation``: its rows (``verify_heapam``'s), or the error it raised
    (``bt_index_check`` raises at the first one; either raises on a page too broken to read)."""
    try:
        rows = session.fetchall(check, (relation,))
    except driver_error as error:
        return [f"{relation}: {_first_line(error)}"]
    return [f"{relation} block {row[0]} item {row[1]}: {row[2]}" for row in rows if len(row) == 3]


def _result(passed: bool | None, detail: str) -> CheckResult:
    return CheckResult(ENGINE_CHECK, ENGINE_CLAUSE, DESCRIPTION, passed, detail)


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
