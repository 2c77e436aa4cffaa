"""What a band's counters count, and a band's value for a run (``maximus.records.Band``): the read side computes
the validity bands a run stored from its counters, without its workload; a workload's own functions use the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

from maximus.records import Band, BandResult, DeferredResult, Outcome, Window

# What a band's counters count, by prefix: "count:new_order.rolled_back" (completed transactions in the window, as
# ``RunFigures.counts`` keys them), "fact:payment.remote" (a summed fact the terminals stored), and
# "deferred:delivery.delivered" / "deferred:delivery.delivered.null" (the items, or the null items, of a field of the
# records of the deferred transactions of that name that committed wholly in the window: TPC-C's skipped districts).
COUNT, FACT, DEFERRED = "count:", "fact:", "deferred:"
NULL = ".null"


@dataclass(frozen=True)
class Counters:
    """What a run's bands count: its completions in the window, its facts and its deferred transactions' records."""

    counts: Mapping[str, int]
    facts: Mapping[str, int]
    deferred: Sequence[DeferredResult]
    window: Window

    def total(self, names: Sequence[str]) -> int:
        return sum(self.value(name) for name in names)

    def value(self, name: str) -> int:
        if name.startswith(COUNT):
            return self.counts.get(name.removeprefix(COUNT), 0)
        if name.startswith(FACT):
            return self.facts.get(name.removeprefix(FACT), 0)
        if name.startswith(DEFERRED):
            return self._deferred(name.removeprefix(DEFERRED))
        raise ValueError(f"a band counts {name!r}: its prefix is none of {COUNT}, {FACT}, {DEFERRED}")

    def _deferred(self, name: str) -> int:
        nulls = name.endswith(NULL)
        transaction, field = name.removesuffix(NULL).split(".", 1)
        items = list(self._items(transaction, field))
        return sum(item is None for item in items) if nulls else len(items)

    def _items(self, transaction: str, field: str) -> Iterator[Any]:
        for result in self.deferred:
            if (result.transaction == transaction and result.outcome is Outcome.COMMITTED and result.record
                    and self.window.holds(result.queued, result.completed - result.queued)):
                yield from result.record[field]


def band_result(band: Band, counters: Counters) -> BandResult:
    part, whole = counters.total(band.numerator), counters.total(band.denominator)
    value = band.scale * part / whole if whole else None
    return BandResult(band.name, value, band.low, band.high, whole, band.note, band.clause)


def band_results(bands: Sequence[Band], counters: Counters) -> list[BandResult]:
    return [band_result(band, counters) for band in bands]
