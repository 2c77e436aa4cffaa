"""TPC-C (specification v5.11): the workload package."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Mapping, Sequence

from maximus.engines.base import Dialect, Engine, Session
from maximus.records import DEFERRED_PREFIX
from maximus.workloads.base import (Band, CheckResult, DatabaseInfo, DurabilityFindings, Headline, Homes,
                                    LoadResult, Outcome, Presentation, Progress, Workload)
from maximus.workloads.tpcc import consistency, durability, generate, loader
from maximus.workloads.tpcc.constants import (DEFERRED_DELIVERY, RESPONSE_TIME_LIMIT, TERMINALS_PER_WAREHOUSE,
                                             TRANSACTION_LABELS, TRANSACTIONS)
from maximus.workloads.tpcc.emulator import TerminalEmulator, TpccRunSettings
from maximus.workloads.tpcc.mix import parse_mix
from maximus.workloads.tpcc.random import NURandConstants
from maximus.workloads.tpcc.schema import money_in_cents
from maximus.workloads.tpcc.settings import KEYS, OPTIONS, TpccSettings, parse_settings
from maximus.workloads.tpcc.sql import statements
from maximus.workloads.tpcc.kinds import TRANSACTION_TYPES, transactions_for
from maximus.workloads.tpcc.transaction import Home, home_of
from maximus.workloads.tpcc.validity import mix_bands, validity_bands

class Tpcc(Workload):
    name = "tpcc"
    headline = Headline("tpmc", "tpmC", "New-Orders per minute incl. rollbacks (5.4)", TRANSACTIONS[0], "nopm", "NOPM",
                        "committed New-Orders per minute", "New-Orders")
    reported_transactions = TRANSACTIONS[:3] + (TRANSACTIONS[3], DEFERRED_DELIVERY, TRANSACTIONS[4])
    setting_names = KEYS
    options = OPTIONS
    server_side = True  # sql/<dialect>.sql

    def settings(self, given: Mapping[str, Any]) -> TpccSettings:
        return parse_settings(given)

    def presentation(self, settings: TpccSettings, terminals: int | None = None) -> Presentation:
        """A run without keying and think times (5.2.5), or with more terminals than a warehouse has (4.2.2), is
        TPC-C-like, never TPC-C."""
        why, meaning = [], []
        if not settings.keying:
            why.append("keying and think times off")
            meaning.append("Keying and think times were off: these runs measure the database flat out and are "
                           "labelled TPC-C-like, not TPC-C (5.2.5).")
        if terminals is not None and terminals > TERMINALS_PER_WAREHOUSE * settings.warehouses:
            why.append(f"more than {TERMINALS_PER_WAREHOUSE} terminals per warehouse")
            meaning.append(f"Runs had up to {terminals / settings.warehouses:g} terminals per warehouse, more than "
                           f"the {TERMINALS_PER_WAREHOUSE} of 4.2.2: terminals shared (warehouse, district) pairs, "
                           "which 2.8.1.1 gives one each, so they are labelled TPC-C-like, not TPC-C.")
        benchmark = f"TPC-C-like ({'; '.join(why)})" if why else "TPC-C"
        conforming = not why
        meaning_text = " ".join(meaning) if why else "Keying and think times were on (5.2.5)."
        return Presentation(self.headline, benchmark, conforming, f"{settings.warehouses} warehouse(s)",
                            f"{settings.warehouses} wh",
                            f"mix {settings.mix}", meaning_text, TRANSACTION_LABELS, RESPONSE_TIME_LIMIT)

    def scale(self, settings: TpccSettings) -> int:
        return settings.warehouses

    def homes(self, settings: TpccSettings) -> Homes:
        """4.2.2: terminals are dealt over the warehouses in turn (``transaction.home_of``)."""
        return Homes(settings.warehouses, "warehouses")

    def database_name(self, settings: TpccSettings) -> str:
        return f"tpcc-{settings.warehouses}wh"

    def load(self, engine: Engine, settings: TpccSettings, seed: int, progress: Progress) -> LoadResult:
        return loader.load(engine, settings.warehouses, seed, progress)

    def split_load(self, engine: Engine, settings: TpccSettings, seed: int) -> loader.WarehouseLoad:
        """Every table but the items has a warehouse column: the warehouses are the build's bulk, split by home."""
        return loader.WarehouseLoad.of(engine, settings.warehouses, seed)

    def database_info(self, session: Session, dialect: Dialect) -> DatabaseInfo | None:
        return loader.read_info(session, dialect)

    def expected_rows(self, settings: TpccSettings) -> Mapping[str, int]:
        return generate.expected_rows(settings.warehouses)

    def prepare(self, engine: Engine, session: Session, loaded_now: bool) -> None:
        """A copy built by an older Maximus runs this version's stored functions."""
        if not loaded_now:
            loader.install_procedures(engine.dialect, session)

    def mark_used(self, session: Session) -> None:
        loader.mark_used(session)

    def run_settings(self, settings: TpccSettings, seed: int, info: DatabaseInfo,
                     server_side: bool) -> TpccRunSettings:
        """C-Run chosen from the seed against the build's C-Load (2.1.6.1)."""
        constants = NURandConstants.for_run(info.inputs.c_last, seed)
        return TpccRunSettings(settings.warehouses, seed, constants, parse_mix(settings.mix), settings.keying,
                               server_side)

    def recorded_inputs(self, info: DatabaseInfo, run_settings: TpccRunSettings) -> Mapping[str, Any]:
        return {"c_load": asdict(info.inputs), "c_run": asdict(run_settings.constants)}

    def transactions(self, dialect: Dialect, settings: TpccRunSettings | None = None) -> dict[str, Any]:
        """The transactions themselves; a run's (``settings`` given): stored-function calls when it asks for them, else
        client-side, run in C where the dialect allows it (``native``)."""
        return transactions_for(dialect, settings is not None and settings.server_side, native=settings is not None)

    def write_transactions(self) -> set[str]:
        return {f"{DEFERRED_PREFIX}{kind.name}" if kind.deferred else kind.name for kind in TRANSACTION_TYPES
                if not kind.read_only}

    def emulator(self, settings: TpccRunSettings, terminal: int, dialect: Dialect) -> TerminalEmulator:
        return TerminalEmulator(settings, terminal, dialect)

    def check(self, session: Session, fresh: bool, dialect: Dialect) -> list[CheckResult]:
        violations = statements("consistency", consistency.SQL, dialect)["violations"]
        return consistency.check_consistency(session, fresh, money_in_cents(dialect), violations)

    def pauses(self, settings: TpccSettings) -> bool:
        return settings.keying

    def warnings(self, settings: TpccSettings, terminals: int) -> list[str]:
        warnings = []
        if not settings.keying:
            warnings.append("keying and think times off: a TPC-C-like run, not a TPC-C result (5.2.5)")
        per_warehouse = terminals / settings.warehouses
        if per_warehouse > TERMINALS_PER_WAREHOUSE:
            warnings.append(f"{per_warehouse:g} terminals per warehouse, more than the {TERMINALS_PER_WAREHOUSE} of "
                            "4.2.2: terminals share (warehouse, district) pairs, which 2.8.1.1 gives one each")
        return warnings

    def validity_bands(self, settings: TpccSettings) -> list[Band]:
        return validity_bands(settings.warehouses)

    def mix_bands(self) -> list[Band]:
        return mix_bands()

    # Crash tests (3.5.4): the success log keeps the New-Orders (workloads/tpcc/durability.py)

    crash_testable = True

    def success_entry(self, transaction: str, outcome: Outcome, inputs: Any, output: Any) -> str | None:
        return durability.success_entry(transaction, outcome, inputs, output)

    def durability_baseline(self, session: Session) -> Any:
        return durability.durability_baseline(session)

    def verify_durability(self, session: Session, entries: Sequence[str], baseline: Any,
                          terminals: int) -> DurabilityFindings:
        return durability.verify_durability(session, entries, baseline, terminals)


__all__ = ["Home", "TRANSACTION_TYPES", "Tpcc", "TpccSettings", "home_of"]
