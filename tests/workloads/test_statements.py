"""A workload's statements per dialect (``workloads/statements.py``): a split statement's parts go to the engine in
one batch, each with the parameters it takes, and its rows come back as the logical statement's; a dialect's
override of a statement the workload does not have is refused."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any, Sequence

import pytest

from maximus.engines.base import Dialect
from maximus.workloads import statements
from maximus.workloads.statements import Part, Split, for_dialect
from maximus.workloads.tpcc import consistency, loader
from maximus.workloads.tpcc import TRANSACTION_TYPES
from maximus.workloads.tpcc.sql import OVERRIDES
from maximus.workloads.tpcc.sql import statements as tpcc_statements
from maximus.workloads.tpcc.transaction import datetime_of


class RecordingSession:
    """Answers each statement of a batch with one row naming it and its parameters; records each batch."""

    def __init__(self) -> None:
        self.batches: list[tuple[list[tuple[str, list]], bool]] = []

    def batch(self, sent: Sequence[tuple[str, Sequence[Any]]], last: bool = False) -> list[list[tuple]]:
        self.batches.append(([(sql, list(params)) for sql, params in sent], last))
        return [[(sql, *params)] for sql, params in sent]

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.batch([(sql, params)])[0]


UPDATE_THEN_READ = Split((Part("U ? ?", (0, 1), returns=False), Part("S ?", (1,), returns=True)))


def test_a_split_is_sent_in_the_same_batch_each_part_with_the_parameters_it_takes() -> None:
    session = RecordingSession()
    per_row = Split(tuple(Part("R ? ?", (2 * n, 2 * n + 1), returns=True) for n in range(2)))
    rows = statements.batch(session, [("A ?", (7,)), (UPDATE_THEN_READ, (5, 1)), (per_row, (10, 1, 11, 1))],
                            last=True)
    assert session.batches == [([("A ?", [7]), ("U ? ?", [5, 1]), ("S ?", [1]), ("R ? ?", [10, 1]),
                                 ("R ? ?", [11, 1])], True)]
    assert rows == [[("A ?", 7)], [("S ?", 1)], [("R ? ?", 10, 1), ("R ? ?", 11, 1)]]


def test_plain_statements_go_as_they_are_and_one_split_is_fetched_alone() -> None:
    session = RecordingSession()
    assert statements.batch(session, [("A ?", [1]), ("B", [])]) == [[("A ?", 1)], [("B",)]]
    assert statements.fetchall(session, UPDATE_THEN_READ, (3, 4)) == [("S ?", 4)]
    assert statements.fetchall(session, "C ?", (9,)) == [("C ?", 9)]
    assert [len(sent) for sent, _ in session.batches] == [2, 2, 1]


def test_an_override_of_a_statement_the_workload_has_not_is_refused() -> None:
    shared = {"warehouse": "UPDATE ... RETURNING", "call": "SELECT * FROM f()"}
    assert for_dialect(shared, {"mariadb": {"call": "SELECT f()"}}, "mariadb") == {**shared, "call": "SELECT f()"}
    assert for_dialect(shared, {"mariadb": {"call": "SELECT f()"}}, "postgres") == shared
    with pytest.raises(KeyError, match="mariadb dialect overrides statements the workload does not have: wharehouse"):
        for_dialect(shared, {"mariadb": {"wharehouse": "UPDATE"}}, "mariadb")


@pytest.mark.parametrize("dialect", sorted(OVERRIDES))
def test_every_tpcc_override_replaces_a_shared_statement_of_the_same_kind(dialect: str) -> None:
    """Each (transaction, statement) a dialect writes its own way is one TPC-C has, and takes the same form: a
    text or a split for a text, a statement maker for a maker."""
    shared = {**{(kind.name, name): text for kind in TRANSACTION_TYPES
                 for name, text in sys.modules[kind.__module__].SQL.items()},
              **{("consistency", name): text for name, text in consistency.SQL.items()},
              **{("load", name): text for name, text in loader.SQL.items()}}
    for key, own in OVERRIDES[dialect].items():
        assert key in shared, key
        assert callable(own) == callable(shared[key]), key
    for kind in TRANSACTION_TYPES:  # and each transaction takes its dialect's call
        written = OVERRIDES[dialect].get((kind.name, "call"), kind.call_sql)
        assert kind(Dialect(dialect)).call_sql == written
    assert tpcc_statements("load", loader.SQL, Dialect(dialect))["analyze"]("stock").startswith("ANALYZE")


def test_a_stored_functions_date_reads_as_a_datetime_whether_it_came_as_text_or_not() -> None:
    stamped = datetime(2024, 5, 1, 12, 0, 0, 123456)
    assert datetime_of("2024-05-01 12:00:00.123456") == stamped
    assert datetime_of(stamped) is stamped and datetime_of(None) is None
