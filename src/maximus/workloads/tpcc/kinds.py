"""TPC-C's five transactions as a run runs them: client-side, or each wrapped as one stored-function call."""

from __future__ import annotations

from typing import Any

from maximus.engines.base import Dialect
from maximus.workloads.tpcc.delivery import Delivery
from maximus.workloads.tpcc.native import available as native_available, wrapped as native_wrapped
from maximus.workloads.tpcc.new_order import NewOrder
from maximus.workloads.tpcc.order_status import OrderStatus
from maximus.workloads.tpcc.payment import Payment
from maximus.workloads.tpcc.server_side import ServerSide
from maximus.workloads.tpcc.stock_level import StockLevel
from maximus.workloads.tpcc.transaction import Transaction

TRANSACTION_TYPES = (NewOrder, Payment, OrderStatus, Delivery, StockLevel)


def transactions_for(dialect: Dialect, server_side: bool, native: bool = False) -> dict[str, Any]:
    """The transaction objects by name, in this dialect: client-side, or stored-function calls (``server_side``).
    ``native``: a run's client-side transactions, each run as a whole in C where the dialect and the session allow
    it (``native.Native``); without it, the transactions themselves, the reference."""
    client_side: dict[str, Transaction] = {kind.name: kind(dialect) for kind in TRANSACTION_TYPES}
    if server_side:
        return {name: ServerSide(transaction, dialect) for name, transaction in client_side.items()}
    return native_wrapped(client_side) if native and native_available(dialect) else client_side
