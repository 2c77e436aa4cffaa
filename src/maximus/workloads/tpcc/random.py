"""TPC-C's random functions (2.1.5, 2.1.6, 4.3.2) for the run: scalar, fast, one stream per terminal."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from maximus.workloads.tpcc.constants import (
    A_C_ID, A_C_LAST, A_OL_I_ID, C_DELTA_FORBIDDEN, C_DELTA_RANGE, C_ID_RANGE, C_LAST_RANGE,
    OL_I_ID_RANGE, SYLLABLES,
)


def last_name(number: int) -> str:
    """4.3.2.3: three syllables indexed by the digits of ``number`` (0..999)."""
    return SYLLABLES[number // 100] + SYLLABLES[number // 10 % 10] + SYLLABLES[number % 10]


LAST_NAMES = tuple(last_name(n) for n in range(1000))


def valid_c_delta(c_load: int, c_run: int) -> bool:
    """2.1.6.1: |C-Load - C-Run| in 65..119 and neither 96 nor 112."""
    delta = abs(c_load - c_run)
    return C_DELTA_RANGE[0] <= delta <= C_DELTA_RANGE[1] and delta not in C_DELTA_FORBIDDEN


def nurand_spans(a: int, x: int, y: int, c: int) -> tuple[int, int, int, int]:
    """NURand(A, x, y) with its C as a draw uses them: (A + 1, x, y - x + 1, C), the spans of its two
    uniform draws, the low end and the constant."""
    return a + 1, x, y - x + 1, c


@dataclass(frozen=True)
class NURandConstants:
    """The C of NURand (2.1.6) per field; one set for all terminals of a run."""

    c_last: int
    c_id: int
    ol_i_id: int

    @classmethod
    def for_load(cls, seed: int) -> "NURandConstants":
        rng = random.Random(f"c-load/{seed}")
        return cls(rng.randint(0, A_C_LAST), rng.randint(0, A_C_ID), rng.randint(0, A_OL_I_ID))

    @classmethod
    def for_run(cls, c_load: int, seed: int) -> "NURandConstants":
        """C-Run for C_LAST chosen so the delta to C-Load obeys 2.1.6.1; C_ID and OL_I_ID free."""
        rng = random.Random(f"c-run/{seed}")
        candidates = [c for c in range(A_C_LAST + 1) if valid_c_delta(c_load, c)]
        return cls(rng.choice(candidates), rng.randint(0, A_C_ID), rng.randint(0, A_OL_I_ID))


class TpccRandom:
    """One terminal's random stream: uniform draws, NURand and the spec's strings."""

    def __init__(self, seed: int | str, constants: NURandConstants) -> None:
        self._rng = random.Random(seed)
        self.constants = constants
        self.random = self._rng.random
        # The three NURand fields, as ``nurand`` draws them, with the ranges worked out once: a
        # New-Order draws an item id for each of its 5..15 lines.
        self.customer_id = self._nurand_of(A_C_ID, *C_ID_RANGE, constants.c_id)
        self.item_id = self._nurand_of(A_OL_I_ID, *OL_I_ID_RANGE, constants.ol_i_id)
        # The same draw's numbers, for the order lines drawn in C (new_order.py).
        self.item_id_spans = nurand_spans(A_OL_I_ID, *OL_I_ID_RANGE, constants.ol_i_id)
        self._last_name_number = self._nurand_of(A_C_LAST, *C_LAST_RANGE, constants.c_last)
        # A uniform draw in 1..100, for the spec's "x percent of the time" rules.
        self.percent = self.uniform_of(1, 100)

    def uniform(self, x: int, y: int) -> int:
        """2.1.5: random(x, y), both ends included.

        A 53-bit float scaled to the range: five times cheaper than ``randint`` (a New-Order draws
        about 45 numbers), and the bias, under y - x + 1 in 2**53, is far below anything measurable.
        """
        return x + int(self.random() * (y - x + 1))

    def uniform_of(self, x: int, y: int) -> Callable[[], int]:
        """``uniform(x, y)`` as a function of no arguments, which costs half as much a call: for the
        draws made many times over (a New-Order's 5..15 quantities, the percent rules)."""
        random, span = self.random, y - x + 1

        def draw() -> int:
            return x + int(random() * span)

        return draw

    def nurand(self, a: int, x: int, y: int, c: int) -> int:
        """2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
        return (((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1)) + x

    def _nurand_of(self, a: int, x: int, y: int, c: int) -> Callable[[], int]:
        random = self.random
        a_span, x, span, c = nurand_spans(a, x, y, c)

        def draw() -> int:  # nurand(a, x, y, c), with uniform() written out
            return (((int(random() * a_span) | (x + int(random() * span))) + c) % span) + x

        return draw

    def customer_last_name(self) -> str:
        return LAST_NAMES[self._last_name_number()]

    def other_warehouse(self, home: int, warehouses: int) -> int:
        """A uniformly chosen warehouse other than ``home`` (needs ``warehouses`` > 1)."""
        other = self.uniform(1, warehouses - 1)
        return other + 1 if other >= home else other

    def money(self, low_cents: int, high_cents: int) -> float:
        return self.uniform(low_cents, high_cents) / 100.0
