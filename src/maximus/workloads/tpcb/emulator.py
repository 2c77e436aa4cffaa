"""One TPC-B terminal's decisions: the balance update, back to back, as pgbench's clients run it."""

from __future__ import annotations

import random
from dataclasses import dataclass

from maximus.engines.base import Dialect
from maximus.workloads.tpcb.transaction import BalanceUpdate, BalanceUpdateInput


@dataclass(frozen=True)
class TpcbRunSettings:
    """What every terminal of one run shares; recorded with the run."""

    branches: int
    accounts_per_branch: int  # as the build recorded it
    seed: int
    server_side: bool = False  # TPC-B's transaction runs client-side only
    pauses: bool = False  # pgbench has no think times
    one_call: bool = False  # five statements a transaction


class TpcbEmulator:
    """One terminal's own random stream, seeded so a run can be repeated."""

    headline = BalanceUpdate.name
    pauses = False

    def __init__(self, settings: TpcbRunSettings, index: int, dialect: Dialect) -> None:
        self.settings = settings
        self.rng = random.Random(f"{settings.seed}/terminal/{index}")
        self.transaction = BalanceUpdate(dialect)

    def next(self) -> tuple[BalanceUpdate, BalanceUpdateInput]:
        return self.transaction, self.transaction.draw(self.rng, self.settings.branches,
                                                       self.settings.accounts_per_branch)

    def batch(self, size: int) -> list[tuple[BalanceUpdate, BalanceUpdateInput]]:
        return [self.next() for _ in range(size)]

    def keying_time(self, name: str) -> float:
        return 0.0

    def think_time(self, name: str) -> float:
        return 0.0
