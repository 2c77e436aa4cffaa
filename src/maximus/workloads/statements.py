"""A workload's client-side statements, written per dialect by the workload.

A transaction asks for a *logical* statement: "lock and read these stock rows", "add to the warehouse's YTD and
return its address". A dialect writes it as one statement (``str``), or as a ``Split``: several statements that
together do it, which the engine sends in the same batch as the rest (one round trip on a server engine), each
taking some of the logical statement's parameters, the rows of some of them making the logical statement's rows.
MariaDB, which has no ``UPDATE ... RETURNING``, writes such an update as the UPDATE, then a SELECT of the rows it
changed.

Engines run the statements they are given and know nothing of this: ``batch`` expands the splits into the
engine's ``Session.batch`` and gathers their rows back. ``for_dialect`` chooses a workload's statements for a
dialect, keyed by (transaction, statement), as BenchBase keys its dialects' overrides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TypeVar, Union

from maximus.engines.session import Session


@dataclass(frozen=True)
class Part:
    """One engine statement of a ``Split``: its text (``?`` placeholders) and, for each placeholder in order, the
    position of the logical statement's parameter it takes."""

    sql: str
    takes: tuple[int, ...]
    returns: bool  # its rows are (some of) the logical statement's rows


@dataclass(frozen=True)
class Split:
    """A logical statement written as several engine statements, run in order in the same batch."""

    parts: tuple[Part, ...]


Statement = Union[str, Split]  # a plain text takes the logical statement's parameters as they are
Key = TypeVar("Key")
Written = TypeVar("Written")


def batch(session: Session, statements: Sequence[tuple[Statement, Sequence[Any]]],
          last: bool = False) -> list[list[tuple]]:
    """``Session.batch`` of logical statements: each one's rows, a split's gathered from its parts."""
    if all(statement.__class__ is str for statement, _ in statements):
        return session.batch(statements, last)  # type: ignore[arg-type]  # the common case: nothing to expand
    sent: list[tuple[str, Sequence[Any]]] = []
    for statement, params in statements:
        if statement.__class__ is str:
            sent.append((statement, params))  # type: ignore[arg-type]
        else:
            sent += [(part.sql, [params[n] for n in part.takes]) for part in statement.parts]  # type: ignore[union-attr]
    return _gathered(statements, session.batch(sent, last))


def _gathered(statements: Sequence[tuple[Statement, Sequence[Any]]], results: list[list[tuple]]) -> list[list[tuple]]:
    """Each logical statement's rows from the engine statements' results, in order."""
    out, position = [], 0
    for statement, _ in statements:
        if statement.__class__ is str:
            out.append(results[position])
            position += 1
            continue
        rows: list[tuple] = []
        for part in statement.parts:  # type: ignore[union-attr]
            if part.returns:
                rows += results[position]
            position += 1
        out.append(rows)
    return out


def fetchall(session: Session, statement: Statement, params: Sequence[Any] = ()) -> list[tuple]:
    """One logical statement's rows, in the caller's transaction."""
    if statement.__class__ is str:
        return session.fetchall(statement, params)  # type: ignore[arg-type]
    return batch(session, [(statement, params)])[0]


def for_dialect(shared: Mapping[Key, Written], overrides: Mapping[str, Mapping[Key, Written]],
                dialect: str) -> dict[Key, Written]:
    """The statements a dialect runs: the shared ones, each replaced by the dialect's own where it has one. An
    override of a statement the workload does not have is a mistake (a misspelt key would be silently unused)."""
    own = overrides.get(dialect, {})
    unknown = sorted(map(str, set(own) - set(shared)))
    if unknown:
        raise KeyError(f"the {dialect} dialect overrides statements the workload does not have: {', '.join(unknown)}")
    return {**shared, **own}
