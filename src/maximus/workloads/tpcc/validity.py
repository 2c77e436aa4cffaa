"""The input-data validity bands of 5.5.1.5 and the mix minima of 5.2.3, as data (``maximus.records.Band``): stored
with each run, they are computed from its counters by the read side, which needs no workload."""

from __future__ import annotations

from typing import Mapping, Sequence

from maximus.bands import COUNT, DEFERRED, FACT, NULL, Counters, band_results
from maximus.records import Band, BandResult
from maximus.records import DeferredResult, Window
from maximus.workloads.tpcc.constants import BAND_CLAUSES, MIX_MINIMA, TRANSACTIONS, VALIDITY_BANDS

DELIVERY = TRANSACTIONS[3]
_DELIVERED = f"{DEFERRED}{DELIVERY}.delivered"  # the districts each Delivery's result file lists (2.7.2.3)

# band -> (numerator, denominator, scale, only_remote): each a ratio of the run's counters
_RATIOS: dict[str, tuple[tuple[str, ...], tuple[str, ...], float, bool]] = {
    "rollback_percent": ((f"{COUNT}new_order.rolled_back",), (f"{COUNT}new_order",), 100.0, False),
    "average_order_lines": ((f"{FACT}new_order.order_lines",), (f"{COUNT}new_order",), 1.0, False),
    "remote_order_line_percent": ((f"{FACT}new_order.remote_order_lines",), (f"{FACT}new_order.order_lines",),
                                  100.0, True),
    "remote_payment_percent": ((f"{FACT}payment.remote",), (f"{COUNT}payment",), 100.0, True),
    "payment_by_name_percent": ((f"{FACT}payment.by_name",), (f"{COUNT}payment",), 100.0, False),
    "order_status_by_name_percent": ((f"{FACT}order_status.by_name",), (f"{COUNT}order_status",), 100.0, False),
    "skipped_delivery_percent": ((f"{_DELIVERED}{NULL}",), (_DELIVERED,), 100.0, False),
}


def validity_bands(warehouses: int) -> list[Band]:
    """5.5.1.5 and 2.7.4.2 for a database of ``warehouses``: with one, nothing is remote and those bands do not
    apply."""
    one_warehouse = "one warehouse: nothing is remote" if warehouses == 1 else ""
    return [Band(name, numerator, denominator, *VALIDITY_BANDS[name], BAND_CLAUSES.get(name, "5.5.1.5"), scale,
                 one_warehouse if only_remote else "")
            for name, (numerator, denominator, scale, only_remote) in _RATIOS.items()]


def mix_bands() -> list[Band]:
    """5.2.3: each type's share of all transactions against its minimum (New-Order has none)."""
    everything = tuple(f"{COUNT}{name}" for name in TRANSACTIONS)
    return [Band(f"{name}_share_percent", (f"{COUNT}{name}",), everything, MIX_MINIMA.get(name, 0.0), 100.0,
                 "5.2.3", note="" if name in MIX_MINIMA else "no minimum (the measured metric)")
            for name in TRANSACTIONS]


def validity_report(counts: Mapping[str, int], facts: Mapping[str, int], warehouses: int,
                    deliveries: Sequence[DeferredResult], window: Window) -> list[BandResult]:
    """``counts``: completed transactions per type in the window (New-Order split into committed and
    rolled back); ``facts``: summed per-transaction facts, keyed "transaction.fact"; ``deliveries``: the
    run's Delivery result file (2.7.2.3)."""
    return band_results(validity_bands(warehouses), Counters(counts, facts, deliveries, window))


def mix_report(counts: Mapping[str, int]) -> list[BandResult]:
    return band_results(mix_bands(), Counters(counts, {}, (), Window(0.0, 0.0)))
