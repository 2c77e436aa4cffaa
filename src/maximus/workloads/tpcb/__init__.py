"""TPC-B as pgbench runs it ("TPC-B (sort of)"): the workload package. Its figure is pgbench's, transactions per
second; its check is the classic one, the balances agree."""

from __future__ import annotations

from typing import Any, Mapping

from maximus.engines.base import Dialect, Engine, Session
from maximus.workloads.base import (CheckResult, DatabaseInfo, Headline, LoadResult, Presentation, Progress,
                                    Workload)
from maximus.workloads.tpcb import consistency, loader
from maximus.workloads.tpcb.emulator import TpcbEmulator, TpcbRunSettings
from maximus.workloads.tpcb.settings import KEYS, OPTIONS, STANDARD_ACCOUNTS_PER_BRANCH, TpcbSettings, parse_settings
from maximus.workloads.tpcb.transaction import BalanceUpdate

TRANSACTION = BalanceUpdate.name


class Tpcb(Workload):
    name = "tpcb"
    # pgbench's tps counts every transaction it finished; none rolls back by rule, so committed ones are the same
    headline = Headline("tps", "tps", "TPC-B transactions per second, as pgbench counts them", TRANSACTION,
                        "committed_tps", "committed tps", "committed TPC-B transactions per second", "Transactions",
                        per_seconds=1.0)
    reported_transactions = (TRANSACTION,)
    setting_names = KEYS
    options = OPTIONS

    def settings(self, given: Mapping[str, Any]) -> TpcbSettings:
        return parse_settings(given)

    def presentation(self, settings: TpcbSettings, terminals: int | None = None) -> Presentation:
        """Always TPC-B-like: pgbench's independent draws, no think times, no audited measurement."""
        size = "" if settings.standard else f", {settings.accounts_per_branch:,} accounts per branch"
        meaning = ("pgbench's default script: account, teller and branch drawn independently, no think times; "
                   "not a TPC-B result.")
        if not settings.standard:
            meaning += (f" Branches had {settings.accounts_per_branch:,} accounts instead of "
                        f"{STANDARD_ACCOUNTS_PER_BRANCH:,}: a smaller database than pgbench's at this scale.")
        return Presentation(self.headline, "TPC-B-like (pgbench)", False, f"scale {settings.scale}{size}",
                            f"s{settings.scale}", f"{settings.accounts_per_branch:,} accounts per branch", meaning,
                            {TRANSACTION: "Balance update"}, {})

    def scale(self, settings: TpcbSettings) -> int:
        return settings.scale

    def database_name(self, settings: TpcbSettings) -> str:
        small = "" if settings.standard else f"-{settings.accounts_per_branch}apb"
        return f"tpcb-{settings.scale}{small}"

    def load(self, engine: Engine, settings: TpcbSettings, seed: int, progress: Progress) -> LoadResult:
        return loader.load(engine, settings, seed, progress)

    def database_info(self, session: Session, dialect: Dialect) -> DatabaseInfo | None:
        return loader.read_info(session)

    def expected_rows(self, settings: TpcbSettings) -> Mapping[str, int]:
        return loader.expected_rows(settings)

    def mark_used(self, session: Session) -> None:
        loader.mark_used(session)

    def run_settings(self, settings: TpcbSettings, seed: int, info: DatabaseInfo,
                     server_side: bool) -> TpcbRunSettings:
        """The accounts per branch the build recorded: what the draws must stay within."""
        return TpcbRunSettings(info.scale, info.inputs, seed)

    def transactions(self, dialect: Dialect, run_settings: TpcbRunSettings | None = None) -> dict[str, Any]:
        return {TRANSACTION: BalanceUpdate(dialect)}

    def write_transactions(self) -> set[str]:
        return {TRANSACTION}

    def emulator(self, run_settings: TpcbRunSettings, terminal: int, dialect: Dialect) -> TpcbEmulator:
        return TpcbEmulator(run_settings, terminal, dialect)

    def check(self, session: Session, fresh: bool, dialect: Dialect) -> list[CheckResult]:
        """The rows expected are those the build recorded writing; without that record nothing can be checked."""
        info = loader.read_info(session)
        if info is None:
            return [consistency.no_build()]
        return consistency.check(session, loader.expected_rows(TpcbSettings(info.scale, info.inputs)), fresh)

    def warnings(self, settings: TpcbSettings, terminals: int) -> list[str]:
        if settings.standard:
            return []
        return [f"{settings.accounts_per_branch:,} accounts per branch, not pgbench's "
                f"{STANDARD_ACCOUNTS_PER_BRANCH:,}: a smaller database than the scale says, whose tps does not "
                "compare with pgbench's"]


__all__ = ["Tpcb", "TpcbSettings"]
