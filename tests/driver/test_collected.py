"""The run's samples kept as columns as they arrive (``driver.collected``): each one the sample it travelled as, in
the order of their starts, whether made columns during the run or at its end."""

from __future__ import annotations

import gc
import math
import random
from array import array

import numpy as np
import pytest

from maximus.driver import collected
from maximus.driver.collected import Collected
from maximus.records import Outcome, TxnSample
from maximus.samples import Samples

ORIGIN = 500.0
FIELDS = ("transaction", "terminal", "start", "latency", "outcome", "attempts", "intended", "error")


def _batches(seed: int, count: int) -> list[tuple[list[tuple], list[tuple]]]:
    """Messages as the terminals send them: sample tuples (failed, rolled back, retried, fixed-rate ones with their
    intended starts) and runs of committed transactions, their times on the monotonic clock, in lists or arrays."""
    draw, made = random.Random(seed), []
    names = ("new_order", "payment", "delivery", "deferred_delivery")
    for _ in range(count):
        tuples = [(draw.randrange(4), draw.choice(names), draw.uniform(0, 9), draw.expovariate(100),
                   draw.choice([o.value for o in Outcome]), draw.randint(1, 3), draw.choice(["", "deadlock", "lost"]),
                   draw.choice([None, draw.uniform(0, 9)])) for _ in range(draw.randrange(3))]
        runs = []
        for _ in range(draw.randrange(3)):
            size, at = draw.randint(1, 64), ORIGIN + draw.uniform(0, 9)
            times = []
            for _ in range(size):
                times += [at, at + draw.expovariate(200)]
                at = times[-1]
            runs.append((draw.randrange(4), [draw.choice(names[:3]) for _ in range(size)],
                         array("d", times) if draw.random() < 0.5 else times))
        made.append((tuples, runs))
    return made


def _expected(batches: list[tuple[list[tuple], list[tuple]]]) -> list[TxnSample]:
    """What the parent made of each before: a TxnSample per sample, in the order of their starts."""
    made = [TxnSample(t, name, start, latency, Outcome(outcome), attempts, error, intended)
            for tuples, _ in batches for t, name, start, latency, outcome, attempts, error, intended in tuples]
    made += [TxnSample(terminal, name, started - ORIGIN, finished - started, Outcome.COMMITTED)
             for _, runs in batches for terminal, names, times in runs
             for name, started, finished in zip(names, list(times)[0::2], list(times)[1::2])]
    return sorted(made, key=lambda sample: sample.start)


def _collected(batches: list[tuple[list[tuple], list[tuple]]]) -> Samples:
    keeper = Collected()
    for tuples, runs in batches:
        keeper.add(tuples, runs, ORIGIN)
    return keeper.samples()


def _assert_same(got: Samples, expected: Samples) -> None:
    assert [got.names[n] for n in got.transaction] == [expected.names[n] for n in expected.transaction]
    for field in FIELDS[1:]:
        np.testing.assert_array_equal(getattr(got, field), getattr(expected, field), err_msg=field)


def test_each_sample_is_the_one_it_travelled_as_in_the_order_of_the_starts() -> None:
    batches = _batches(seed=1, count=300)
    samples = _collected(batches)
    expected = _expected(batches)
    assert len(samples) == len(expected) > 1000
    assert [(s.terminal, s.transaction, s.outcome, s.attempts, s.error, s.intended) for s in samples] == \
        [(s.terminal, s.transaction, s.outcome, s.attempts, s.error, s.intended) for s in expected]
    assert all(math.isclose(a.start, b.start, abs_tol=1e-12) and math.isclose(a.latency, b.latency, abs_tol=1e-12)
               for a, b in zip(samples, expected))
    assert np.all(np.diff(samples.start) >= 0)


def test_columns_made_during_the_run_are_the_ones_made_at_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run's samples become columns as they wait (a few each time here): the names keep their numbers across
    the pieces, and the runs their time origin."""
    batches = _batches(seed=2, count=300)
    at_the_end = _collected(batches)
    monkeypatch.setattr(collected, "COMPACT_AT_BYTES", 2_000)
    monkeypatch.setattr(collected, "_TUPLE_SLICE", 3)
    keeper, pieces = Collected(), 0
    for tuples, runs in batches:
        keeper.add(tuples, runs, ORIGIN)
        pieces += keeper.waiting_bytes == 0
        assert keeper.waiting_bytes < 2_000 + 64 * 40 + 2 * 320
    assert pieces > 20
    _assert_same(keeper.samples(), at_the_end)


def test_a_ctrl_c_while_columns_are_made_loses_no_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second Ctrl-C raises wherever the run's process is, and the run is stored all the same: one that lands
    while the waiting samples are made columns leaves them waiting, to be made columns at the end."""
    batches = _batches(seed=3, count=200)
    monkeypatch.setattr(collected, "COMPACT_AT_BYTES", 20_000)
    monkeypatch.setattr(collected, "_TUPLE_SLICE", 4)
    keeper, made_tuples, slices, interrupted = Collected(), Collected._tuple_columns, [], []

    def interrupted_once(self: Collected, tuples: list[tuple]) -> dict:
        slices.append(len(tuples))
        if len(slices) == 2:  # its second slice: the first is made
            interrupted.append(self.waiting_bytes)
            raise KeyboardInterrupt
        return made_tuples(self, tuples)

    monkeypatch.setattr(Collected, "_tuple_columns", interrupted_once)
    for tuples, runs in batches:
        try:
            keeper.add(tuples, runs, ORIGIN)
        except KeyboardInterrupt:
            assert keeper.waiting_bytes == interrupted[0]  # nothing taken from the waiting samples
    assert interrupted and gc.isenabled()
    _assert_same(keeper.samples(), Samples.of(_expected(batches)))


def test_the_samples_are_handed_over_once() -> None:
    keeper = Collected()
    keeper.add([(0, "payment", 1.0, 0.5, Outcome.FAILED.value, 2, "lost", None)], [], ORIGIN)
    (sample,) = keeper.samples()
    assert sample == TxnSample(0, "payment", 1.0, 0.5, Outcome.FAILED, 2, "lost")
    again = keeper.samples()
    assert len(again) == 0 and again.names == ()
