"""The remote terminal emulator's decisions for one TPC-C terminal: what to run next, and when."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Mapping

from maximus.engines.base import Dialect
from maximus.workloads.tpcc.constants import KEYING_TIME, THINK_TIME_MEAN, THINK_TIME_TRUNCATION
from maximus.workloads.tpcc.drawer import c_drawer
from maximus.workloads.tpcc.mix import make_mix
from maximus.workloads.tpcc.random import NURandConstants, TpccRandom
from maximus.workloads.tpcc.kinds import transactions_for
from maximus.workloads.tpcc.transaction import Transaction, home_of


@dataclass(frozen=True)
class TpccRunSettings:
    """What every terminal of one run shares; recorded with the run."""

    warehouses: int
    seed: int
    constants: NURandConstants  # C-Run (2.1.6.1), the same for all terminals
    weights: Mapping[str, float] | None = None  # None: the 23-card deck
    keying_and_think: bool = False
    server_side: bool = False  # each transaction one stored-function call

    @property
    def pauses(self) -> bool:
        """The terminals key and think between transactions (5.2.5)."""
        return self.keying_and_think

    @property
    def one_call(self) -> bool:
        """Server-side, each transaction is one stored-function call; client-side, several statements."""
        return self.server_side


class TerminalEmulator:
    """One terminal's own random stream, mix and home; seeded so a run can be repeated."""

    headline = "new_order"  # the transaction whose rate is the metric (5.4.1)

    def __init__(self, settings: TpccRunSettings, index: int, dialect: Dialect) -> None:
        self.settings = settings
        self.home = home_of(index, settings.warehouses)
        self.rng = TpccRandom(f"{settings.seed}/terminal/{index}", settings.constants)
        self.mix = make_mix(random.Random(f"{settings.seed}/mix/{index}"), settings.weights)
        self.think_rng = random.Random(f"{settings.seed}/think/{index}")
        self.transactions: dict[str, Transaction] = transactions_for(dialect, settings.server_side, native=True)
        self._drawer = c_drawer(self.transactions, self.rng, self.home)

    def next(self) -> tuple[Transaction, Any]:
        """The next transaction and its input."""
        return self._draw(self.mix.next())

    def batch(self, size: int) -> list[tuple[Transaction, Any]]:
        """The next ``size`` transactions and inputs, exactly those ``size`` calls of ``next()`` give: in C
        when the extension is built (``drawer``), else in Python.

        Nothing drawn depends on the time, and think times have a random stream of their own, so a
        busy terminal may draw ahead (``driver.terminal``) without changing a single input.
        """
        names = self.mix.deal(size)
        if self._drawer is not None:
            return self._drawer.draw(names)
        return [self._draw(name) for name in names]

    @property
    def draws_in_c(self) -> bool:
        return self._drawer is not None

    def _draw(self, name: str) -> tuple[Transaction, Any]:
        transaction = self.transactions[name]
        return transaction, transaction.draw(self.rng, self.home)

    @property
    def pauses(self) -> bool:
        """Whether the terminal keys and thinks between transactions (5.2.5), or runs them back to back."""
        return self.settings.keying_and_think

    def keying_time(self, name: str) -> float:
        """5.2.5.2: a constant minimum per transaction type."""
        return KEYING_TIME[name] if self.settings.keying_and_think else 0.0

    def think_time(self, name: str) -> float:
        """5.2.5.4: negative exponential around the mean, truncated at 10 means."""
        if not self.settings.keying_and_think:
            return 0.0
        mean = THINK_TIME_MEAN[name]
        return min(self.think_rng.expovariate(1.0 / mean), THINK_TIME_TRUNCATION * mean)
