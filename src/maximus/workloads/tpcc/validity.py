"""The input-data validity bands of 5.5.1.5 and the mix minima of 5.2.3, from a run's counters."""

from __future__ import annotations

from typing import Mapping, Sequence

from maximus.records import DeferredResult, Outcome, Window
from maximus.workloads.base import BandResult
from maximus.workloads.tpcc.constants import BAND_CLAUSES, MIX_MINIMA, TRANSACTIONS, VALIDITY_BANDS

DELIVERY = TRANSACTIONS[3]


def _percent(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def validity_report(counts: Mapping[str, int], facts: Mapping[str, int], warehouses: int,
                    deliveries: Sequence[DeferredResult], window: Window) -> list[BandResult]:
    """``counts``: completed transactions per type in the window (New-Order split into committed and
    rolled back); ``facts``: summed per-transaction facts, keyed "transaction.fact"; ``deliveries``: the
    run's Delivery result file (2.7.2.3)."""
    skipped, districts = skipped_districts(deliveries, window)
    new_orders = counts.get("new_order", 0)
    payments = counts.get("payment", 0)
    lines = facts.get("new_order.order_lines", 0)
    one_warehouse = "one warehouse: nothing is remote" if warehouses == 1 else ""
    values = {
        "rollback_percent": (_percent(counts.get("new_order.rolled_back", 0), new_orders), new_orders, ""),
        "average_order_lines": (lines / new_orders if new_orders else None, new_orders, ""),
        "remote_order_line_percent": (_percent(facts.get("new_order.remote_order_lines", 0), lines), lines,
                                      one_warehouse),
        "remote_payment_percent": (_percent(facts.get("payment.remote", 0), payments), payments, one_warehouse),
        "payment_by_name_percent": (_percent(facts.get("payment.by_name", 0), payments), payments, ""),
        "order_status_by_name_percent": (_percent(facts.get("order_status.by_name", 0),
                                                  counts.get("order_status", 0)), counts.get("order_status", 0), ""),
        "skipped_delivery_percent": (_percent(skipped, districts), districts, ""),
    }
    return [BandResult(name, value, *VALIDITY_BANDS[name], sample, note, BAND_CLAUSES.get(name, "5.5.1.5"))
            for name, (value, sample, note) in values.items()]


def skipped_districts(deliveries: Sequence[DeferredResult], window: Window) -> tuple[int, int]:
    """2.7.4.2: (districts skipped, districts delivered or skipped) by the Deliveries that committed wholly in
    the measured window, from their result-file records."""
    delivered = [order for result in deliveries
                 if result.transaction == DELIVERY and result.outcome is Outcome.COMMITTED and result.record
                 and window.holds(result.queued, result.completed - result.queued)
                 for order in result.record["delivered"]]
    return sum(order is None for order in delivered), len(delivered)


def mix_report(counts: Mapping[str, int]) -> list[BandResult]:
    """5.2.3: each type's share of all transactions against its minimum (New-Order has none)."""
    total = sum(counts.get(name, 0) for name in TRANSACTIONS)
    return [BandResult(f"{name}_share_percent", _percent(counts.get(name, 0), total), MIX_MINIMA.get(name, 0.0),
                       100.0, total, "" if name in MIX_MINIMA else "no minimum (the measured metric)", "5.2.3")
            for name in TRANSACTIONS]
