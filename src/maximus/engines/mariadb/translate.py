"""The workloads' shared SQL (the dialect SQLite and PostgreSQL run) rewritten for MariaDB, once per statement text.

A statement becomes a ``Plan``: one or more MariaDB statements, each with the positions of the original
parameters its ``?`` placeholders take, which a session sends together in one round trip. What changes:

- ``UPDATE ... RETURNING cols`` (MariaDB returns rows from INSERT and DELETE only): the UPDATE, then
  ``SELECT cols FROM table WHERE`` the same condition, which reads the rows as the transaction changed them.
- A join with a ``(VALUES (...), ...) AS l`` list (New-Order's stock rows): one statement per row of the list,
  its ``l.columnN`` replaced by that row's parameters, so each reads or changes one row by its primary key;
  MariaDB's optimiser could otherwise scan the table for the derived table's rows, locking every row it reads.
- ``FOR UPDATE OF table`` becomes ``FOR UPDATE``; ``WITH v AS MATERIALIZED`` loses its hint; ``ANALYZE t``
  is ``ANALYZE TABLE t``; a CREATE TABLE's ``TIMESTAMP`` is ``DATETIME(6)`` (MariaDB's TIMESTAMP is seconds
  since 1970 in the session's time zone, and ends in 2038).
- A stored-function call as PostgreSQL writes it (``SELECT * FROM tpcc_x(...)``, ``?::numeric``, the server's UTC
  clock) is the call of the MariaDB function of the same name, which returns its row as a JSON array.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UTC_NOW = "UTC_TIMESTAMP(6)"  # the server's UTC time to the microsecond, as DATETIME(6) holds it
_POSTGRES_UTC_NOW = "(now() AT TIME ZONE 'UTC')"
_UPDATE_RETURNING = re.compile(r"^\s*UPDATE\s+(\w+)\s+SET\s+(.*?)\s+WHERE\s+(.*?)\s+RETURNING\s+(.*?)\s*$",
                               re.S | re.I)
_SELECT_VALUES_JOIN = re.compile(r"^\s*(SELECT\s+.*?)\s+FROM\s+\(VALUES\s+(.*)\)\s+AS\s+(\w+)\s+JOIN\s+(\w+)\s+ON\s+"
                                 r"(.*?)(\s+FOR\s+UPDATE(?:\s+OF\s+\w+)?)?\s*$", re.S | re.I)
_UPDATE_FROM_VALUES = re.compile(r"^\s*UPDATE\s+(\w+)\s+SET\s+(.*?)\s+FROM\s+\(VALUES\s+(.*)\)\s+AS\s+(\w+)\s+"
                                 r"WHERE\s+(.*?)\s*$", re.S | re.I)
_FUNCTION_ROW = re.compile(r"^\s*SELECT\s+\*\s+FROM\s+(tpcc_\w+)\s*\((.*)\)\s*$", re.S | re.I)
_VALUES_ROW = re.compile(r"\((?:[^()]|\([^()]*\))*\)")
_FOR_UPDATE_OF = re.compile(r"\bFOR\s+UPDATE\s+OF\s+\w+", re.I)
_MATERIALIZED = re.compile(r"\bAS\s+MATERIALIZED\s*\(", re.I)
_ANALYZE = re.compile(r"^\s*ANALYZE\s+(\w+)\s*$", re.I)
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\b", re.I)
_TIMESTAMP = re.compile(r"\bTIMESTAMP\b", re.I)
_CAST_SUFFIX = re.compile(r"::\w+")


@dataclass(frozen=True)
class Part:
    """One MariaDB statement of a plan: its text (``?`` placeholders) and, for each placeholder in order, the
    position of the original statement's parameter it takes."""

    sql: str
    takes: tuple[int, ...]
    returns: bool  # its rows are (part of) the original statement's result


@dataclass(frozen=True)
class Plan:
    parts: tuple[Part, ...]
    json_row: bool = False  # the result is one JSON array, the row of a stored function (``SELECT * FROM f()``)


def translate(sql: str) -> Plan:
    """The MariaDB statements that do what ``sql`` does (see the module's docstring)."""
    match = _FUNCTION_ROW.match(sql)
    if match:
        return Plan((_whole(f"SELECT {match.group(1)}({_call_arguments(match.group(2))})"),), json_row=True)
    if sql.lstrip().upper().startswith("SELECT TPCC_"):
        return Plan((_whole(_call_arguments(sql)),))
    match = _SELECT_VALUES_JOIN.match(sql)
    if match:
        columns, rows, alias, table, condition, lock = match.groups()
        locking = " FOR UPDATE" if lock else ""
        return _per_row(f"{columns} FROM {table} WHERE {condition}{locking}", columns, rows, alias, returns=True)
    match = _UPDATE_FROM_VALUES.match(sql)
    if match:
        table, assignments, rows, alias, condition = match.groups()
        return _per_row(f"UPDATE {table} SET {assignments} WHERE {condition}", f"UPDATE {table} SET {assignments}",
                        rows, alias, returns=False)
    match = _UPDATE_RETURNING.match(sql)
    if match:
        table, assignments, condition, returned = match.groups()
        update = f"UPDATE {table} SET {assignments} WHERE {condition}"
        first = update.count("?") - condition.count("?")
        return Plan((Part(update, tuple(range(update.count("?"))), False),
                     Part(f"SELECT {returned} FROM {table} WHERE {condition}",
                          tuple(range(first, first + condition.count("?"))), True)))
    match = _ANALYZE.match(sql)
    if match:
        return Plan((_whole(f"ANALYZE TABLE {match.group(1)}"),))
    if _CREATE_TABLE.match(sql):
        return Plan((_whole(_TIMESTAMP.sub("DATETIME(6)", sql)),))
    return Plan((_whole(_MATERIALIZED.sub("AS (", _FOR_UPDATE_OF.sub("FOR UPDATE", sql))),))


def _whole(sql: str) -> Part:
    return Part(sql, tuple(range(sql.count("?"))), True)


def _call_arguments(text: str) -> str:
    """A call's arguments with PostgreSQL's casts dropped and its UTC clock made MariaDB's."""
    return _CAST_SUFFIX.sub("", text.replace(_POSTGRES_UTC_NOW, UTC_NOW))


def _per_row(template: str, head: str, rows_text: str, alias: str, returns: bool) -> Plan:
    """``template`` once per row of the VALUES list ``rows_text``: each ``alias.columnN`` becomes a placeholder for
    that row's N-th parameter; the placeholders of ``head`` (before the list) and after it keep their own."""
    rows = _VALUES_ROW.findall(rows_text)
    width = rows[0].count("?") if rows else 0
    if not rows or any(row.count("?") != width for row in rows):
        raise ValueError(f"cannot translate a VALUES list of this shape for MariaDB: {rows_text[:80]}")
    before = head.count("?")
    after_base = before + width * len(rows)
    reference = re.compile(rf"\b{re.escape(alias)}\.column(\d+)\b|\?")
    parts = []
    for number in range(len(rows)):
        takes: list[int] = []
        counter = {"head": 0, "tail": 0}

        def placeholder(found: re.Match, at: int) -> str:
            if found.group(1):
                takes.append(before + number * width + int(found.group(1)) - 1)
            elif at < len(head):
                takes.append(counter["head"])
                counter["head"] += 1
            else:
                takes.append(after_base + counter["tail"])
                counter["tail"] += 1
            return "?"

        text = reference.sub(lambda found: placeholder(found, found.start()), template)
        parts.append(Part(text, tuple(takes), returns))
    return Plan(tuple(parts))
