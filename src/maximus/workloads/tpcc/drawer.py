"""A terminal's batch of inputs drawn in C (``_draws.Drawer``), when the extension is built.

A busy terminal draws its inputs between round trips, on the CPUs the server uses, where the server
keeps evicting the interpreter from the caches: drawn in Python, the draws were about a quarter of the
terminal processes' CPU; drawn in C, those processes spend about 9 % less CPU per transaction
(bench/README.md, docs/internals.md). The C drawer does the same draws from the same stream, the
terminal's ``random.Random``, and makes the same objects: the Python draws stay the reference, and the
fallback without a C compiler.
"""

from __future__ import annotations

from typing import Any, Mapping

from maximus.workloads.tpcc.constants import (
    A_C_ID, A_C_LAST, AMOUNT_RANGE_CENTS, BY_NAME_PERCENT, C_ID_RANGE, C_LAST_RANGE, CARRIER_RANGE,
    DISTRICTS_PER_WAREHOUSE, MAX_ORDER_LINES, MIN_ORDER_LINES, PAYMENT_REMOTE_PERCENT, REMOTE_SUPPLY_PERCENT,
    ROLLBACK_PERCENT, STOCK_THRESHOLD_RANGE, TRANSACTIONS, UNUSED_ITEM_ID,
)
from maximus.workloads.tpcc.delivery import Delivery, DeliveryInput
from maximus.workloads.tpcc.native import Native
from maximus.workloads.tpcc.new_order import QUANTITY_RANGE, NewOrder, NewOrderInput
from maximus.workloads.tpcc.order_status import OrderStatus, OrderStatusInput
from maximus.workloads.tpcc.payment import Payment, PaymentInput
from maximus.workloads.tpcc.random import LAST_NAMES, TpccRandom, nurand_spans
from maximus.workloads.tpcc.server_side import Call, ServerSide
from maximus.workloads.tpcc.stock_level import StockLevel, StockLevelInput
from maximus.workloads.tpcc.transaction import Home, Transaction

try:
    from maximus.workloads.tpcc._draws import Drawer
except ImportError:  # built without a C compiler: the terminals draw in Python
    Drawer = None

# In the order Drawer takes them (_draws.c).
KINDS: tuple[tuple[type[Transaction], type], ...] = (
    (NewOrder, NewOrderInput), (Payment, PaymentInput), (OrderStatus, OrderStatusInput), (Delivery, DeliveryInput),
    (StockLevel, StockLevelInput))
CONSTANTS = (DISTRICTS_PER_WAREHOUSE, MIN_ORDER_LINES, MAX_ORDER_LINES, ROLLBACK_PERCENT, REMOTE_SUPPLY_PERCENT,
             UNUSED_ITEM_ID, *QUANTITY_RANGE, PAYMENT_REMOTE_PERCENT, BY_NAME_PERCENT, *AMOUNT_RANGE_CENTS,
             *STOCK_THRESHOLD_RANGE, *CARRIER_RANGE)


def c_drawer(transactions: Mapping[str, Any], rng: TpccRandom, home: Home) -> Any | None:
    """What draws a batch of ``transactions`` for this terminal in C (``draw(names)``), or None: without
    the extension, or when the transactions are not exactly TPC-C's five, all client-side or all calls
    converted alike."""
    if Drawer is None or tuple(transactions) != TRANSACTIONS:
        return None
    server_side = all(isinstance(t, ServerSide) for t in transactions.values())
    first = transactions[TRANSACTIONS[0]]
    if server_side and any(t.convert != first.convert for t in transactions.values()):
        return None  # the Drawer converts every call's parameters with one function
    kinds = []
    for (name, transaction), (kind, input_type) in zip(transactions.items(), KINDS):
        inner = transaction.inner if server_side or isinstance(transaction, Native) else transaction
        if type(inner) is not kind:
            return None
        kinds.append((name, transaction, input_type, inner.call_sql if server_side else None))
    constants = rng.constants
    spans = (*nurand_spans(A_C_ID, *C_ID_RANGE, constants.c_id), *rng.item_id_spans,
             *nurand_spans(A_C_LAST, *C_LAST_RANGE, constants.c_last))
    return Drawer(random=rng.random, home=(home.w_id, home.d_id, home.warehouses), nurand=spans,
                  last_names=LAST_NAMES, constants=CONSTANTS, kinds=tuple(kinds),
                  call_type=Call if server_side else None,
                  convert=first.convert if server_side else None)
