"""The consistency conditions of clause 3.3.2 on a small hand-built TPC-C database in SQLite.

The population follows 4.3.3.1 with fewer rows: 1 warehouse, 2 districts, 3 customers per district,
orders 1..2100 delivered (so condition 11's 2100 holds as specified) and 2101..2103 undelivered. SQLite
keeps money in integer cents (``schema.money_in_cents``), so every amount here is in cents.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from maximus.engines.base import Session
from maximus.engines.sqlite import SQLiteEngine
from maximus.workloads.tpcc.consistency import CheckResult, check_consistency
from maximus.workloads.tpcc.constants import FIRST_UNDELIVERED_ORDER
from maximus.workloads.tpcc.schema import schema_statements

DISTRICTS = 2
CUSTOMERS = 3
LAST_ORDER = FIRST_UNDELIVERED_ORDER + 2  # 2101..2103 undelivered in each district
LOAD_DATE = "2024-01-01 00:00:00"
RUN_DATE = "2024-01-02 00:00:00"
ALL = set(range(1, 13))


def _ol_cnt(o_id: int) -> int:
    return 1 + o_id % 3


def _undelivered_amount(o_id: int, number: int) -> int:
    return (o_id * 37 + number * 11) % 999_999 + 1


def _populate(engine: SQLiteEngine, session: Session) -> None:
    for statement in schema_statements(SQLiteEngine.dialect):
        session.execute(statement)
    session.begin()
    ytd = 1000 * CUSTOMERS
    engine.bulk_insert(session, "warehouse", ("w_id", "w_ytd"), [(1, ytd * DISTRICTS)])
    engine.bulk_insert(session, "district", ("d_w_id", "d_id", "d_ytd", "d_next_o_id"),
                       [(1, d, ytd, LAST_ORDER + 1) for d in range(1, DISTRICTS + 1)])
    customers = [(d, c) for d in range(1, DISTRICTS + 1) for c in range(1, CUSTOMERS + 1)]
    engine.bulk_insert(session, "customer", ("c_w_id", "c_d_id", "c_id", "c_balance", "c_ytd_payment",
                                             "c_payment_cnt", "c_delivery_cnt"),
                       [(1, d, c, -1000, 1000, 1, 0) for d, c in customers])
    engine.bulk_insert(session, "history", ("h_c_w_id", "h_c_d_id", "h_c_id", "h_w_id", "h_d_id", "h_date",
                                            "h_amount"),
                       [(1, d, c, 1, d, LOAD_DATE, 1000) for d, c in customers])
    orders = [(d, o) for d in range(1, DISTRICTS + 1) for o in range(1, LAST_ORDER + 1)]
    engine.bulk_insert(session, "orders", ("o_w_id", "o_d_id", "o_id", "o_c_id", "o_carrier_id", "o_ol_cnt"),
                       [(1, d, o, 1 + o % CUSTOMERS, 1 + o % 10 if o < FIRST_UNDELIVERED_ORDER else None,
                         _ol_cnt(o)) for d, o in orders])
    engine.bulk_insert(session, "order_line", ("ol_w_id", "ol_d_id", "ol_o_id", "ol_number", "ol_delivery_d",
                                               "ol_amount"),
                       [_order_line(d, o, n) for d, o in orders for n in range(1, _ol_cnt(o) + 1)])
    engine.bulk_insert(session, "new_order", ("no_w_id", "no_d_id", "no_o_id"),
                       [(1, d, o) for d, o in orders if o >= FIRST_UNDELIVERED_ORDER])
    session.commit()


def _order_line(d: int, o: int, n: int) -> tuple:
    if o < FIRST_UNDELIVERED_ORDER:
        return (1, d, o, n, LOAD_DATE, 0)
    return (1, d, o, n, None, _undelivered_amount(o, n))


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One populated database file per module; each test works on its own copy."""
    engine = SQLiteEngine(tmp_path_factory.mktemp("template"), "t", {})
    engine.provision()
    session = engine.connect()
    try:
        _populate(engine, session)
    finally:
        session.close()
    return engine.path


@pytest.fixture
def session(template: Path, tmp_path: Path):
    engine = SQLiteEngine(tmp_path, "t", {})
    engine.path.write_bytes(template.read_bytes())
    session = engine.connect()
    yield session
    session.close()


def _failed(results: list[CheckResult]) -> set[int]:
    return {r.condition for r in results if r.passed is False}


def _by_number(results: list[CheckResult]) -> dict[int, CheckResult]:
    return {r.condition: r for r in results}


def test_all_twelve_hold_on_a_fresh_population(session: Session) -> None:
    results = check_consistency(session, fresh=True, money_in_cents=True)
    assert [r.condition for r in results] == list(range(1, 13))
    assert [r.clause for r in results] == [f"3.3.2.{n}" for n in range(1, 13)]
    for result in results:
        assert result.passed is True, (result.condition, result.detail)
        assert result.detail == ""
        assert result.description and "\n" not in result.description


def test_condition_11_is_skipped_unless_fresh(session: Session) -> None:
    results = _by_number(check_consistency(session, fresh=False, money_in_cents=True))
    assert results[11].passed is None
    assert "fresh" in results[11].detail
    assert all(results[n].passed is True for n in ALL - {11})


# condition -> (statements that break it, every condition they break, a piece of the targeted detail)
CORRUPTIONS: dict[int, tuple[list[str], set[int], str]] = {
    1: (["UPDATE warehouse SET w_ytd = w_ytd + 1000 WHERE w_id = 1"], {1, 8},
        "1 warehouse violates: w_id=1 w_ytd=70.00 sum(d_ytd)=60.00"),
    2: (["UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_id = 2"], {2},
        "1 district violates: w_id=1 d_id=2 d_next_o_id-1=2104 max(o_id)=2103 max(no_o_id)=2103"),
    3: (["DELETE FROM new_order WHERE no_d_id = 1 AND no_o_id = 2102"], {3, 5, 11},
        "w_id=1 d_id=1 max(no_o_id)-min(no_o_id)+1=3 count(new_order)=2"),
    4: (["INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_amount) "
         "VALUES (1, 2, 9999, 1, 500)"], {4}, "w_id=1 d_id=2 sum(o_ol_cnt)="),
    5: (["UPDATE orders SET o_carrier_id = 3 WHERE o_d_id = 1 AND o_id = 2103"], {5, 7},
        "w_id=1 d_id=1 o_id=2103 o_carrier_id=3 in_new_order=yes"),
    6: (["UPDATE order_line SET ol_o_id = 2102, ol_number = 99 "
         "WHERE ol_d_id = 2 AND ol_o_id = 2101 AND ol_number = 1"], {6},
        f"2 orders violate: w_id=1 d_id=2 o_id=2101 o_ol_cnt={_ol_cnt(2101)} count(order_line)={_ol_cnt(2101) - 1}; "
        f"w_id=1 d_id=2 o_id=2102 o_ol_cnt={_ol_cnt(2102)} count(order_line)={_ol_cnt(2102) + 1}"),
    7: (["UPDATE order_line SET ol_delivery_d = NULL WHERE ol_d_id = 1 AND ol_o_id = 8 AND ol_number = 1"], {7},
        "w_id=1 d_id=1 o_id=8 o_carrier_id=9 delivered_lines=2 undelivered_lines=1"),
    8: (["UPDATE history SET h_w_id = 2 WHERE h_d_id = 1 AND h_c_id = 1"], {8, 9},
        "w_id=1 w_ytd=60.00 sum(h_amount)=50.00"),
    9: (["UPDATE history SET h_d_id = 2 WHERE h_d_id = 1 AND h_c_id = 1"], {9},
        "2 districts violate: w_id=1 d_id=1 d_ytd=30.00 sum(h_amount)=20.00; "
        "w_id=1 d_id=2 d_ytd=30.00 sum(h_amount)=40.00"),
    10: (["UPDATE customer SET c_balance = c_balance + 500, c_ytd_payment = c_ytd_payment - 500 "
          "WHERE c_d_id = 2 AND c_id = 3"], {10},
         "1 customer violates: w_id=1 d_id=2 c_id=3 c_balance=-5.00 sum(delivered ol_amount)=0.00 "
         "sum(h_amount)=10.00"),
    11: (["DELETE FROM order_line WHERE ol_d_id = 1 AND ol_o_id = 5",
          "DELETE FROM orders WHERE o_d_id = 1 AND o_id = 5"], {11},
         "w_id=1 d_id=1 count(orders)=2102 count(new_order)=3"),
    12: (["UPDATE customer SET c_ytd_payment = c_ytd_payment + 150 WHERE c_d_id = 1 AND c_id = 2"], {12},
         "w_id=1 d_id=1 c_id=2 c_balance=-10.00 c_ytd_payment=11.50 sum(delivered ol_amount)=0.00"),
}


# The other half of a two-sided condition, for those whose main corruption only tests one side.
OTHER_SIDES = [
    (2, ["INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES (1, 1, 2104)"], {2, 11},
     "w_id=1 d_id=1 d_next_o_id-1=2103 max(o_id)=2103 max(no_o_id)=2104"),
    (5, ["UPDATE orders SET o_carrier_id = NULL WHERE o_d_id = 2 AND o_id = 3"], {5, 7},
     "w_id=1 d_id=2 o_id=3 o_carrier_id=NULL in_new_order=no"),
    (7, [f"UPDATE order_line SET ol_delivery_d = '{LOAD_DATE}', ol_amount = 0 "
         "WHERE ol_d_id = 2 AND ol_o_id = 2102 AND ol_number = 1"], {7},
     f"w_id=1 d_id=2 o_id=2102 o_carrier_id=NULL delivered_lines=1 undelivered_lines={_ol_cnt(2102) - 1}"),
]
CASES = [pytest.param(n, *CORRUPTIONS[n], id=f"condition-{n}") for n in sorted(CORRUPTIONS)] + [
    pytest.param(*case, id=f"condition-{case[0]}-other-side") for case in OTHER_SIDES]


@pytest.mark.parametrize(("condition", "statements", "broken", "detail"), CASES)
def test_a_targeted_corruption_breaks_its_condition(session: Session, condition: int, statements: list[str],
                                                    broken: set[int], detail: str) -> None:
    for statement in statements:
        assert session.execute(statement) >= 1
    results = check_consistency(session, fresh=True, money_in_cents=True)
    assert _failed(results) == broken
    assert all(r.passed is True for r in results if r.condition not in broken)
    assert detail in _by_number(results)[condition].detail


def test_every_condition_has_a_corruption() -> None:
    assert set(CORRUPTIONS) == ALL


def test_one_cent_is_a_mismatch(session: Session) -> None:
    session.execute("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_id = 1")
    assert _failed(check_consistency(session, fresh=True, money_in_cents=True)) == {1, 9}


def test_money_is_compared_exactly_without_a_tolerance(session: Session) -> None:
    """The check had a half-cent tolerance while SQLite kept money as REAL; money is exact now, and so is it."""
    session.execute("UPDATE warehouse SET w_ytd = w_ytd + 0.000001")
    assert _failed(check_consistency(session, fresh=True, money_in_cents=True)) == {1, 8}


def test_a_missing_amount_is_a_mismatch(session: Session) -> None:
    session.execute("UPDATE warehouse SET w_ytd = NULL")
    results = _by_number(check_consistency(session, fresh=True, money_in_cents=True))
    assert results[1].passed is False and "w_ytd=NULL" in results[1].detail
    assert results[8].passed is False


def test_only_the_first_few_violations_are_listed(session: Session) -> None:
    session.execute("UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_d_id = 2")
    detail = _by_number(check_consistency(session, fresh=True, money_in_cents=True))[6].detail
    assert detail.startswith(f"{LAST_ORDER} orders violate: w_id=1 d_id=2 o_id=1 ")
    assert detail.count("o_id=") == 3


# --- A short run: the conditions keep holding through New-Order, Payment and Delivery ---


def _payment(session: Session, d_id: int, c_id: int, amount: int) -> None:
    session.begin()
    session.execute("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = 1", (amount,))
    session.execute("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = 1 AND d_id = ?", (amount, d_id))
    session.execute("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ? "
                    "WHERE c_w_id = 1 AND c_d_id = ? AND c_id = ?", (amount, amount, d_id, c_id))
    session.execute("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount) "
                    "VALUES (?, ?, 1, ?, 1, ?, ?)", (c_id, d_id, d_id, RUN_DATE, amount))
    session.commit()


def _new_order(session: Session, d_id: int, c_id: int, amounts: list[int]) -> None:
    session.begin()
    (o_id,) = session.fetchone("SELECT d_next_o_id FROM district WHERE d_w_id = 1 AND d_id = ?", (d_id,))
    session.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = ?", (d_id,))
    session.execute("INSERT INTO orders (o_w_id, o_d_id, o_id, o_c_id, o_ol_cnt) VALUES (1, ?, ?, ?, ?)",
                    (d_id, o_id, c_id, len(amounts)))
    session.execute("INSERT INTO new_order (no_w_id, no_d_id, no_o_id) VALUES (1, ?, ?)", (d_id, o_id))
    for number, amount in enumerate(amounts, 1):
        session.execute("INSERT INTO order_line (ol_w_id, ol_d_id, ol_o_id, ol_number, ol_amount) "
                        "VALUES (1, ?, ?, ?, ?)", (d_id, o_id, number, amount))
    session.commit()


def _deliver(session: Session, d_id: int, carrier: int) -> None:
    session.begin()
    (o_id,) = session.fetchone("SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = 1 AND no_d_id = ?", (d_id,))
    session.execute("DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = ? AND no_o_id = ?", (d_id, o_id))
    session.execute("UPDATE orders SET o_carrier_id = ? WHERE o_w_id = 1 AND o_d_id = ? AND o_id = ?",
                    (carrier, d_id, o_id))
    session.execute("UPDATE order_line SET ol_delivery_d = ? WHERE ol_w_id = 1 AND ol_d_id = ? AND ol_o_id = ?",
                    (RUN_DATE, d_id, o_id))
    (c_id, total) = session.fetchone(
        "SELECT o.o_c_id, SUM(ol.ol_amount) FROM orders o JOIN order_line ol ON ol.ol_w_id = o.o_w_id "
        "AND ol.ol_d_id = o.o_d_id AND ol.ol_o_id = o.o_id WHERE o.o_w_id = 1 AND o.o_d_id = ? AND o.o_id = ? "
        "GROUP BY o.o_c_id", (d_id, o_id))
    session.execute("UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + 1 "
                    "WHERE c_w_id = 1 AND c_d_id = ? AND c_id = ?", (total, d_id, c_id))
    session.commit()


def _short_run(session: Session) -> None:
    for amount in (10, 20, 30, 123457, 499999, 1):  # cents whose sums in binary floating point are inexact
        _payment(session, 1 + amount % DISTRICTS, 1 + amount % CUSTOMERS, amount)
    _new_order(session, 1, 2, [10, 20, 9999])
    for _ in range(LAST_ORDER - FIRST_UNDELIVERED_ORDER + 1):  # empties district 2's NEW-ORDER
        _deliver(session, 1, 4)
        _deliver(session, 2, 7)


def test_conditions_hold_after_a_short_run(session: Session) -> None:
    _short_run(session)
    assert session.fetchone("SELECT COUNT(*) FROM new_order WHERE no_d_id = 2") == (0,)
    results = _by_number(check_consistency(session, fresh=False, money_in_cents=True))
    assert all(results[n].passed is True for n in ALL - {11}), [r.detail for r in results.values()]
    assert results[11].passed is None


def test_condition_11_fails_after_a_run_when_claimed_fresh(session: Session) -> None:
    _short_run(session)
    assert _failed(check_consistency(session, fresh=True, money_in_cents=True)) == {11}


def test_the_empty_new_order_district_still_checks_max_order(session: Session) -> None:
    _short_run(session)
    session.execute("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_id = 2")
    detail = _by_number(check_consistency(session, fresh=False, money_in_cents=True))[2].detail
    assert detail == "1 district violates: w_id=1 d_id=2 d_next_o_id-1=2104 max(o_id)=2103 max(no_o_id)=NULL"
