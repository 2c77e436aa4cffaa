"""Stock-Level (clause 2.8): recently sold items whose stock is below a threshold; read-only."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.constants import STOCK_LEVEL_ORDERS, STOCK_THRESHOLD_RANGE
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.screens import StockLevelScreen
from maximus.workloads.tpcc.sql import statements
from maximus.workloads.tpcc.transaction import Home, one_row


SQL = {"call": "SELECT tpcc_stock_level(?, ?, ?)"}  # the shared SQL: every dialect with stored functions has it
LOW_STOCK = ("SELECT COUNT(DISTINCT s_i_id) FROM district, order_line, stock WHERE d_w_id = ? AND d_id = ? "
             "AND ol_w_id = d_w_id AND ol_d_id = d_id AND ol_o_id < d_next_o_id "
             f"AND ol_o_id >= d_next_o_id - {STOCK_LEVEL_ORDERS} AND s_w_id = d_w_id AND s_i_id = ol_i_id "
             "AND s_quantity < ?")


class StockLevelInput(NamedTuple):
    w_id: int
    d_id: int
    threshold: int


class StockLevel:
    name = "stock_level"
    read_only = True
    deferred = False
    one_snapshot = False  # 3.4.0.1: level 1 is enough for Stock-Level
    isolation_means = "committed reads"
    call_sql = SQL["call"]

    def __init__(self, dialect: Dialect) -> None:
        self.call_sql = statements(self.name, SQL, dialect)["call"]

    def draw(self, rng: TpccRandom, home: Home) -> StockLevelInput:
        """2.8.1: the terminal's own warehouse and district (2.8.1.1), threshold 10..20."""
        return StockLevelInput(home.w_id, home.d_id, rng.uniform(*STOCK_THRESHOLD_RANGE))

    def call(self, inputs: StockLevelInput) -> tuple[str, tuple]:
        return self.call_sql, (inputs.w_id, inputs.d_id, inputs.threshold)

    def summed_facts(self, inputs: Sequence[StockLevelInput]) -> dict[str, int]:
        return {}

    def execute(self, session: Session, inputs: StockLevelInput) -> StockLevelScreen:
        """2.8.2.2 in one statement: the district's next order number, and the stock of the items of the 20
        orders before it."""
        ((low,),), = session.batch([(LOW_STOCK, (inputs.w_id, inputs.d_id, inputs.threshold))], last=True)
        return StockLevelScreen(*inputs, low)

    def screen(self, inputs: StockLevelInput, row: tuple | None) -> StockLevelScreen:
        return StockLevelScreen(*inputs, one_row(row, "stock level's row")[0])
