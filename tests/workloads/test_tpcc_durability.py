"""The TPC-C crash test's verification (3.5.4) against its success log, on the 1-warehouse build in SQLite and in
PostgreSQL: real New-Orders logged as a terminal logs them, then the database changed as a crash could leave it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator

import pytest

from maximus.engines.base import Engine, Session
from maximus.records import DurabilityFindings, Outcome, RollbackByRule
from maximus.workloads.tpcc import Tpcc
from maximus.workloads.tpcc.constants import UNUSED_ITEM_ID
from maximus.workloads.tpcc.durability import (COUNTER_CONDITION, ROLLED_BACK_CONDITION, WHOLE_CONDITION,
                                               CommittedOrder, RolledBackOrder, parse_entry)
from maximus.workloads.tpcc.new_order import NewOrderInput, OrderLine
from maximus.workloads.tpcc.screens import NewOrderScreen
from maximus.workloads.tpcc.server_side import Call, ServerSide

from restored import restored_build  # tests/restored.py

TERMINALS = 4
WORKLOAD = Tpcc()


def _order(d_id: int, c_id: int, items: tuple[int, ...]) -> NewOrderInput:
    return NewOrderInput.from_lines(1, d_id, c_id, tuple(OrderLine(i_id, 1, 1 + i_id % 10) for i_id in items))


# Three orders in district 2, two in district 7, one rolled back by its unused item (2.4.1.5) in district 2
ORDERS = [_order(2, 11, (1, 2, 3, 4, 5)), _order(7, 12, (6, 7, 8, 9, 10, 11)), _order(2, 13, (12, 13, 14, 15, 16)),
          _order(2, 14, (17, 18, 19, 20, 21, 22, 23)), _order(7, 15, (24, 25, 26, 27, 28))]
ROLLBACK = _order(2, 16, (29, 30, 31, 32, UNUSED_ITEM_ID))


@pytest.fixture(params=[("sqlite", "client"), ("postgres", "client"), ("postgres", "server")],
                ids=["sqlite", "postgres-client", "postgres-server"])
def engine_mode(request: pytest.FixtureRequest, built_workdir: Path, tmp_path: Path) -> Iterator[tuple[Engine, str]]:
    """The pristine 1-warehouse build, restored, with its server up; and how its New-Orders run."""
    name, mode = request.param
    with restored_build(name, request, built_workdir, tmp_path) as engine:
        yield engine, mode


class Logged:
    """A database after the logged New-Orders ran, with a session on it, its baseline and its success log."""

    def __init__(self, session: Session, baseline: Any, entries: list[str]) -> None:
        self.session, self.baseline, self.entries = session, baseline, entries

    def change(self, *statements: tuple[str, tuple]) -> None:
        """Change the database in one transaction, as a crash could have left it."""
        self.session.begin()
        for sql, params in statements:
            self.session.execute(sql, params)
        self.session.commit()

    def verified(self, terminals: int = TERMINALS) -> DurabilityFindings:
        return WORKLOAD.verify_durability(self.session, self.entries, self.baseline, terminals)


@pytest.fixture
def logged(engine_mode: tuple[Engine, str]) -> Iterator[Logged]:
    engine, mode = engine_mode
    session = engine.connect()
    try:
        baseline = WORKLOAD.durability_baseline(session)
        entries = [_logged(engine, session, mode, inputs) for inputs in [*ORDERS[:3], ROLLBACK, *ORDERS[3:]]]
        yield Logged(session, baseline, [entry for entry in entries if entry is not None])
    finally:
        session.close()


def _logged(engine: Engine, session: Session, mode: str, inputs: NewOrderInput) -> str | None:
    """Run one New-Order as a terminal does in ``mode``; its success log entry."""
    transaction = WORKLOAD.transactions(engine.dialect)["new_order"]
    drawn: Any = inputs
    if mode == "server":
        sql, params = transaction.call(inputs)
        drawn = Call(inputs, sql, params, params)
    session.begin()
    try:
        if mode == "server":
            screen = ServerSide(transaction, engine.dialect).screen(session, drawn)
        else:
            screen = transaction.execute(session, inputs)
    except RollbackByRule:
        session.rollback()
        return WORKLOAD.success_entry("new_order", Outcome.ROLLED_BACK, drawn, None)
    session.commit()
    return WORKLOAD.success_entry("new_order", Outcome.COMMITTED, drawn, screen)


def _passed(findings: DurabilityFindings) -> dict[int, bool | None]:
    return {check.condition: check.passed for check in findings.checks}


def _committed(logged: Logged) -> list[CommittedOrder]:
    return [entry for entry in map(parse_entry, logged.entries) if isinstance(entry, CommittedOrder)]


def _lose(entry: CommittedOrder) -> tuple[tuple[str, tuple], ...]:
    """What losing an acknowledged commit, the last of its district, looks like: none of its rows, and the
    district's counter back."""
    key = (entry.w_id, entry.d_id, entry.o_id)
    return (("DELETE FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?", key),
            ("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?", key),
            ("DELETE FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", key),
            ("UPDATE district SET d_next_o_id = d_next_o_id - 1 WHERE d_w_id = ? AND d_id = ?", key[:2]))


ALL_PASS = {WHOLE_CONDITION: True, ROLLED_BACK_CONDITION: True, COUNTER_CONDITION: True}


def test_the_log_names_every_order_and_nothing_is_missing(logged: Logged) -> None:
    committed = _committed(logged)
    assert [(entry.d_id, entry.c_id, entry.ol_cnt) for entry in committed] == [
        (order.d_id, order.c_id, len(order.item_ids)) for order in ORDERS]
    assert [entry.o_id for entry in committed if entry.d_id == 2] == [3001, 3002, 3003]
    assert logged.entries.count("rolled_back 1 2 16 5") == 1
    findings = logged.verified()
    assert (findings.acknowledged, findings.rolled_back, findings.lost) == (5, 1, ())
    assert _passed(findings) == ALL_PASS, findings.checks


def test_a_lost_commit_is_named_and_the_database_stays_consistent(logged: Logged) -> None:
    last_of_district_2 = [entry for entry in _committed(logged) if entry.d_id == 2][-1]
    logged.change(*_lose(last_of_district_2))
    findings = logged.verified()
    assert findings.lost == (str(last_of_district_2),)
    assert findings.acknowledged == 5
    assert _passed(findings) == ALL_PASS, findings.checks


def test_an_order_of_another_customer_under_a_logged_id_is_a_loss(logged: Logged) -> None:
    entry = _committed(logged)[1]
    logged.change(("UPDATE orders SET o_c_id = o_c_id + 1 WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
                   (entry.w_id, entry.d_id, entry.o_id)))
    findings = logged.verified()
    assert findings.lost == (str(entry),)
    assert _passed(findings) == ALL_PASS, findings.checks


def test_an_order_without_its_lines_is_inconsistent(logged: Logged) -> None:
    entry = _committed(logged)[0]
    logged.change(("DELETE FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
                   (entry.w_id, entry.d_id, entry.o_id)))
    findings = logged.verified()
    assert findings.lost == ()
    assert _passed(findings)[WHOLE_CONDITION] is False
    whole = findings.checks[0]
    assert whole.detail == f"1 acknowledged order violates: {entry}: 0 line(s)"


def test_the_lines_of_an_order_without_its_order_row_are_inconsistent(logged: Logged) -> None:
    entry = _committed(logged)[3]
    logged.change(("DELETE FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
                   (entry.w_id, entry.d_id, entry.o_id)))
    findings = logged.verified()
    assert (findings.lost, _passed(findings)[WHOLE_CONDITION]) == ((), False)
    assert findings.checks[0].detail == (f"1 acknowledged order violates: {entry}: no ORDER row, but 7 line(s) "
                                         "and a NEW-ORDER row")


def test_an_undelivered_order_without_its_new_order_row_is_inconsistent(logged: Logged) -> None:
    entry = _committed(logged)[2]
    logged.change(("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?",
                   (entry.w_id, entry.d_id, entry.o_id)))
    findings = logged.verified()
    assert (findings.lost, _passed(findings)[WHOLE_CONDITION]) == ((), False)
    assert "undelivered without a NEW-ORDER row" in findings.checks[0].detail


def test_a_delivered_order_needs_no_new_order_row(logged: Logged) -> None:
    entry = _committed(logged)[2]
    key = (entry.w_id, entry.d_id, entry.o_id)
    logged.change(("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?", key),
                  ("UPDATE orders SET o_carrier_id = 3 WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", key))
    assert _passed(logged.verified()) == ALL_PASS


def test_a_line_of_the_unused_item_is_a_rolled_back_order_in_the_database(logged: Logged) -> None:
    """The rolled-back order as a whole, committed after all: its lines name the unused item."""
    (o_id,) = logged.session.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 2") or (0,)
    logged.change(
        ("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_carrier_id, o_ol_cnt, o_all_local) "
         "VALUES (?, 2, 1, 16, NULL, 1, 1)", (o_id,)),
        ("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, 2, 1)", (o_id,)),
        ("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
         "ol_amount) VALUES (?, 2, 1, 1, ?, 1, 1, 0)", (o_id, UNUSED_ITEM_ID)),
        ("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 2", ()))
    findings = logged.verified()
    assert _passed(findings) == {**ALL_PASS, ROLLED_BACK_CONDITION: False}, findings.checks
    assert findings.checks[1].detail == f"1 order violates: order 1 2 {o_id}: 1 line(s) of an item not in ITEM"


def test_a_rolled_back_order_short_of_its_unused_line_is_in_the_database(logged: Logged) -> None:
    """What a stored function that enters the lines it finds before it rolls back leaves, had its rollback been
    lost: the order of the rolled-back customer and line count, without the unused item's line."""
    (o_id,) = logged.session.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = 2") or (0,)
    logged.change(
        ("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_carrier_id, o_ol_cnt, o_all_local) "
         "VALUES (?, 2, 1, 16, NULL, 5, 1)", (o_id,)),
        ("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (?, 2, 1)", (o_id,)),
        *(("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
           "ol_amount) VALUES (?, 2, 1, ?, ?, 1, 1, 0)", (o_id, number, 28 + number)) for number in range(1, 5)),
        ("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 2", ()))
    findings = logged.verified()
    assert _passed(findings) == {**ALL_PASS, ROLLED_BACK_CONDITION: False}, findings.checks
    assert "as a rolled-back New-Order of the log" in findings.checks[1].detail


@pytest.mark.parametrize("advance, passed", [(TERMINALS, True), (TERMINALS + 1, False), (-1, False)])
def test_the_counters_advance_by_the_surviving_commits_and_at_most_one_per_terminal(
        logged: Logged, advance: int, passed: bool) -> None:
    logged.change(("UPDATE district SET d_next_o_id = d_next_o_id + ? WHERE d_w_id = 1 AND d_id = 7", (advance,)))
    findings = logged.verified()
    assert _passed(findings) == {**ALL_PASS, COUNTER_CONDITION: passed}, findings.checks
    assert findings.lost == ()


def test_a_log_of_another_database_is_refused(logged: Logged) -> None:
    with pytest.raises(ValueError, match="names a district the baseline does not have"):
        WORKLOAD.verify_durability(logged.session, ["committed 2 1 3001 5 5"], logged.baseline, TERMINALS)


# The success log's lines, without a database


def _screen(w_id: int, d_id: int, c_id: int, o_id: int, ol_cnt: int) -> Any:
    """What the entry reads of a New-Order's screen (``NewOrderScreen``)."""
    return NewOrderScreen(w_id, d_id, c_id, "BARBARBAR", "GC", Decimal("0.1"), Decimal("0.1"), Decimal("0.1"),
                          ol_cnt, o_id, None, Decimal("1.00"), ())


def test_a_committed_entry_reads_back_as_it_was_written() -> None:
    line = WORKLOAD.success_entry("new_order", Outcome.COMMITTED, ORDERS[0], _screen(1, 3, 517, 3012, 9))
    assert line == "committed 1 3 3012 517 9"
    assert parse_entry(line) == CommittedOrder(1, 3, 3012, 517, 9)
    assert str(parse_entry(line)) == line


def test_a_rolled_back_entry_reads_back_as_it_was_written_in_either_mode() -> None:
    client = WORKLOAD.success_entry("new_order", Outcome.ROLLED_BACK, ROLLBACK, None)
    server = WORKLOAD.success_entry("new_order", Outcome.ROLLED_BACK, Call(ROLLBACK, "", (), ()), None)
    assert client == server == "rolled_back 1 2 16 5"
    assert parse_entry(client or "") == RolledBackOrder(1, 2, 16, 5)


@pytest.mark.parametrize("transaction, outcome", [("new_order", Outcome.FAILED), ("payment", Outcome.COMMITTED),
                                                  ("delivery", Outcome.ROLLED_BACK)])
def test_other_outcomes_and_transactions_are_not_logged(transaction: str, outcome: Outcome) -> None:
    assert WORKLOAD.success_entry(transaction, outcome, ORDERS[0], _screen(1, 3, 517, 3012, 9)) is None


def test_a_committed_new_order_without_its_screen_is_refused() -> None:
    with pytest.raises(ValueError, match="needs its screen"):
        WORKLOAD.success_entry("new_order", Outcome.COMMITTED, ORDERS[0], None)


@pytest.mark.parametrize("line", ["", "committed 1 3 3012 517", "committed 1 3 3012 517 9 4", "rolled_back 1 x 5 5",
                                  "retry 1 2 3 4"])
def test_a_line_the_log_cannot_have_is_refused(line: str) -> None:
    with pytest.raises(ValueError, match="not a TPC-C success log entry"):
        parse_entry(line)


def test_the_workload_is_crash_testable() -> None:
    assert Tpcc.crash_testable is True
