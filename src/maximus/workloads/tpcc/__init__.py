"""TPC-C (specification v5.11): the workload package."""

from __future__ import annotations

from typing import Callable, Mapping

from maximus.engines.base import Dialect, Engine, Session
from maximus.workloads.base import Workload
from maximus.workloads.tpcc import generate, loader
from maximus.workloads.tpcc.constants import DEFERRED_DELIVERY, TERMINALS_PER_WAREHOUSE, TRANSACTIONS
from maximus.workloads.tpcc.delivery import Delivery
from maximus.workloads.tpcc.emulator import TerminalEmulator, TpccRunSettings
from maximus.workloads.tpcc.new_order import NewOrder
from maximus.workloads.tpcc.order_status import OrderStatus
from maximus.workloads.tpcc.payment import Payment
from maximus.workloads.tpcc.stock_level import StockLevel
from maximus.workloads.tpcc.server_side import ServerSide
from maximus.workloads.tpcc.transaction import Home, Transaction

TRANSACTION_TYPES = (NewOrder, Payment, OrderStatus, Delivery, StockLevel)


def home_of(terminal: int, warehouses: int) -> Home:
    """4.2.2 and 2.8.1.1: terminals are dealt over the warehouses in turn, each with its own district.

    With the full ten terminals per warehouse every (warehouse, district) pair has one terminal;
    with fewer, every warehouse still gets its share, as it would in a scaled-down real system, rather
    than the first warehouse taking them all and serialising every Payment on its one row.
    """
    return Home(terminal % warehouses + 1, terminal // warehouses % TERMINALS_PER_WAREHOUSE + 1, warehouses)


class Tpcc(Workload):
    name = "tpcc"
    transaction_names = TRANSACTIONS
    reported_transactions = TRANSACTIONS[:3] + (TRANSACTIONS[3], DEFERRED_DELIVERY, TRANSACTIONS[4])

    def load(self, engine: Engine, scale: int, seed: int,
             progress: Callable[[str, int], None] = lambda table, rows: None) -> loader.LoadResult:
        return loader.load(engine, scale, seed, progress)

    def database_info(self, session: Session, dialect: Dialect) -> loader.DatabaseInfo | None:
        return loader.read_info(session, dialect)

    def expected_rows(self, scale: int) -> Mapping[str, int]:
        return generate.expected_rows(scale)

    def transactions(self, dialect: Dialect, settings: TpccRunSettings | None = None) -> dict[str, Transaction]:
        """Client-side transactions, or wrapped as stored-function calls when the run asks for them."""
        client_side = {kind.name: kind(dialect) for kind in TRANSACTION_TYPES}
        if settings is None or not settings.server_side:
            return client_side
        return {name: ServerSide(transaction, dialect) for name, transaction in client_side.items()}

    def emulator(self, settings: TpccRunSettings, terminal: int, dialect: Dialect) -> TerminalEmulator:
        return TerminalEmulator(settings, terminal, dialect)

    def check(self, session: Session, fresh: bool, dialect: Dialect) -> list:
        from maximus.workloads.tpcc.consistency import check_consistency

        return check_consistency(session, fresh, dialect.money_in_cents)


__all__ = ["Home", "Tpcc", "home_of"]
