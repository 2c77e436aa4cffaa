"""Both transaction modes do the whole profile of clause 2: the same inputs, run client-side (the driver's
statements) and server-side (one stored-function call each), return the same output screens and leave
the same database."""

from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from maximus import api
from maximus.workloads.tpcc.screens import DeliveryResult

import tpcc_modes  # tests/tpcc_modes.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


def test_both_modes_return_the_same_screens_and_leave_the_same_database(loaded: Path) -> None:
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    results, stamps = {}, {}
    since = datetime.now(timezone.utc).replace(tzinfo=None)
    with api.running(engine):
        for mode in ("server", "client"):
            engine.restore()
            session = engine.connect()
            try:
                shown = tpcc_modes.screens(engine, session, mode, tpcc_modes.cases(session))
                contents = tpcc_modes.postgres_contents(session)
                results[mode] = [tpcc_modes.undated(screen, since) for screen in shown], contents
                stamps[mode] = [stamp for (stamp,) in session.fetchall(
                    "SELECT o_entry_d FROM orders WHERE o_entry_d >= ? UNION ALL "
                    "SELECT h_date FROM history WHERE h_date >= ?", (since, since))]
            finally:
                session.close()
    for mode, stamped in stamps.items():  # one clock, the server's, to the microsecond in both modes
        assert len(stamped) >= 4 and any(stamp.microsecond for stamp in stamped), (mode, stamped)
        assert all(since <= stamp <= datetime.now(timezone.utc).replace(tzinfo=None) for stamp in stamped)
    assert results["server"][1] == results["client"][1]
    server, client = results["server"][0], results["client"][0]
    for case, (one, other) in enumerate(zip(server, client)):
        assert one == other, case
    new_order, repeated, payment, bad_credit, by_name, status, status_by_name, _, delivery, stock = server
    assert [line.brand_generic for line in new_order.lines][:1] == ["B"] and new_order.lines[2].brand_generic == "G"
    assert new_order.lines[1].s_quantity > 80  # restocked: fewer than 10 would have remained (2.4.2.2)
    assert new_order.total_amount == (sum(line.ol_amount for line in new_order.lines) * (1 - new_order.c_discount)
                                      * (1 + new_order.w_tax + new_order.d_tax)).quantize(Decimal("0.01"))
    assert [line.i_id for line in repeated.lines] == [5, 6, 5, 7, 5] and all(line.i_name for line in repeated.lines)
    assert payment.c_data is None and payment.warehouse.zip.endswith("11111")
    assert bad_credit.c_data.startswith(f"{bad_credit.c_id} 5 1 5 1 17.05 ") and len(bad_credit.c_data) == 200
    assert by_name.c_id == status_by_name.c_id and by_name.c_balance == status_by_name.c_balance
    assert status.o_id == new_order.o_id and status.o_carrier_id is None
    assert [(line.i_id, line.quantity) for line in status.lines] == [(l.i_id, l.quantity) for l in new_order.lines]
    assert isinstance(delivery, DeliveryResult) and delivery.skipped == 0
    assert stock.low_stock >= 0


def test_a_batch_is_one_transaction_whose_first_error_is_raised_and_stops_the_rest(loaded: Path) -> None:
    """The pipeline of ``Session.batch``: BEGIN goes with it, a failing statement raises its own error (with its
    SQLSTATE), what follows it does not run, and the rollback undoes what came before."""
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()
        session = engine.connect()
        try:
            before = session.fetchone("SELECT w_ytd FROM warehouse WHERE w_id = ?", (1,))
            session.begin()
            with pytest.raises(psycopg.errors.DivisionByZero):
                session.batch([("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = 1", (5,)),
                               ("SELECT 1 / ?::int", (0,)),
                               ("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = 1", (7,))], last=True)
            session.rollback()
            assert session.fetchone("SELECT w_ytd FROM warehouse WHERE w_id = ?", (1,)) == before
            session.begin()
            assert session.batch([("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = 1 RETURNING w_ytd", (5,))],
                                 last=True) == [[(before[0] + 5,)]]
            session.commit()  # the batch committed it: nothing left to do
            assert session.fetchone("SELECT w_ytd FROM warehouse WHERE w_id = ?", (1,)) == (before[0] + 5,)
        finally:
            session.close()


def test_a_batch_on_a_lost_connection_raises_the_connections_error(loaded: Path) -> None:
    """What the driver's failure and the engine's fault (``Engine.fault``) are made of: libpq's message."""
    engine = api.make_engine("postgres", loaded, ONE_WAREHOUSE, {})
    with api.running(engine):
        engine.restore()
        session, killer = engine.connect(), engine.connect()
        try:
            (pid,) = session.fetchone("SELECT pg_backend_pid()")
            killer.fetchone("SELECT pg_terminate_backend(?)", (pid,))
            with pytest.raises(psycopg.DatabaseError, match="closed the connection"):  # libpq's words, no SQLSTATE
                session.batch([("SELECT ?::int", (1,))])
            assert session.broken()
        finally:
            session.close()
            killer.close()
