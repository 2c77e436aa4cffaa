"""Server-side mode: each transaction is one call of a stored function (sql/<dialect>.sql)."""

from __future__ import annotations

from importlib import resources
from typing import Any

from maximus.engines.base import Dialect, Session
from maximus.records import RollbackByRule
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.transaction import Home, Transaction

ROLLBACK_SQLSTATE = "MX001"  # raised by tpcc_new_order for the unused item of 2.4.2.3


def procedures_sql(dialect: Dialect) -> str | None:
    """The dialect's stored functions, or None when the workload has none for it."""
    path = resources.files("maximus.workloads.tpcc") / "sql" / f"{dialect.name}.sql"
    return path.read_text() if path.is_file() else None


class ServerSide:
    """Wraps a transaction so that it runs as one function call; everything else is the transaction's."""

    single_statement = True  # one call in autocommit mode is atomic: no BEGIN/COMMIT round trips

    def __init__(self, inner: Transaction) -> None:
        self.inner = inner
        self.name, self.read_only, self.deferred = inner.name, inner.read_only, inner.deferred

    def statement(self, inputs: Any) -> tuple[str, tuple]:
        return self.inner.call(inputs)

    @staticmethod
    def rolled_back_by_rule(error: BaseException) -> bool:
        return getattr(error, "sqlstate", None) == ROLLBACK_SQLSTATE

    def draw(self, rng: TpccRandom, home: Home) -> Any:
        return self.inner.draw(rng, home)

    def facts(self, inputs: Any) -> dict[str, int]:
        return self.inner.facts(inputs)

    def execute(self, session: Session, inputs: Any) -> None:
        sql, params = self.inner.call(inputs)
        try:
            session.call(sql, params)
        except Exception as error:
            if getattr(error, "sqlstate", None) == ROLLBACK_SQLSTATE:
                raise RollbackByRule(str(error)) from error
            raise
