"""The input-data validity bands of 5.5.1.5 and the mix minima of 5.2.3, from a run's counters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from maximus.workloads.tpcc.constants import MIX_MINIMA, TRANSACTIONS, VALIDITY_BANDS


@dataclass(frozen=True)
class BandResult:
    name: str
    value: float | None  # None: nothing to measure (no such transaction in the window)
    low: float
    high: float
    sample: int  # how many draws the value rests on
    note: str = ""

    @property
    def status(self) -> str:
        if self.note:
            return "n/a"
        if self.value is None:
            return "no data"
        return "ok" if self.low <= self.value <= self.high else "OUT OF BAND"


def _percent(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def validity_report(counts: Mapping[str, int], facts: Mapping[str, int], warehouses: int) -> list[BandResult]:
    """``counts``: completed transactions per type in the window (New-Order split into committed and
    rolled back); ``facts``: summed per-transaction facts, keyed "transaction.fact"."""
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
    }
    return [BandResult(name, value, *VALIDITY_BANDS[name], sample, note)
            for name, (value, sample, note) in values.items()]


def mix_report(counts: Mapping[str, int]) -> list[BandResult]:
    """5.2.3: each type's share of all transactions against its minimum (New-Order has none)."""
    total = sum(counts.get(name, 0) for name in TRANSACTIONS)
    return [BandResult(f"{name}_share_percent", _percent(counts.get(name, 0), total), MIX_MINIMA.get(name, 0.0),
                       100.0, total, "" if name in MIX_MINIMA else "no minimum (the measured metric)")
            for name in TRANSACTIONS]
