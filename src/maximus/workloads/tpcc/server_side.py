"""Server-side mode: each transaction is one call of a stored function (sql/<dialect>.sql)."""

from __future__ import annotations

from importlib import resources
from typing import Any, NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.records import RollbackByRule
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.transaction import Home, Transaction

ROLLBACK_SQLSTATE = "MX001"  # raised by tpcc_new_order for the unused item of 2.4.2.3


def procedures_sql(dialect: Dialect) -> str | None:
    """The dialect's stored functions, or None when the workload has none for it."""
    path = resources.files("maximus.workloads.tpcc") / "sql" / f"{dialect.name}.sql"
    return path.read_text() if path.is_file() else None


class Call(NamedTuple):
    """A drawn input and the function call that carries it out, built when drawn so the terminal's
    loop between two round trips does as little as possible.

    A named tuple, like every transaction's input: a frozen dataclass costs several times as much to build,
    and a terminal builds a few thousand of each a second."""

    inputs: Any
    sql: str
    params: tuple
    converted: Sequence[Any]  # the params as the engine's Session.call takes them


class ServerSide:
    """Wraps a transaction so that it runs as one function call; everything else is the transaction's."""

    single_statement = True  # one call in autocommit mode is atomic: no BEGIN/COMMIT round trips

    def __init__(self, inner: Transaction, dialect: Dialect) -> None:
        self.inner = inner
        self.name, self.read_only, self.deferred = inner.name, inner.read_only, inner.deferred
        self.one_snapshot, self.isolation_means = inner.one_snapshot, inner.isolation_means
        self.convert = dialect.call_parameters

    def draw(self, rng: TpccRandom, home: Home) -> Call:
        inputs = self.inner.draw(rng, home)
        sql, params = self.inner.call(inputs)
        return Call(inputs, sql, params, self.convert(params))

    @staticmethod
    def statement(call: Call) -> tuple[str, tuple]:
        return call.sql, call.params

    @staticmethod
    def rolled_back_by_rule(error: BaseException) -> bool:
        return getattr(error, "sqlstate", None) == ROLLBACK_SQLSTATE

    def summed_facts(self, calls: Sequence[Call]) -> dict[str, int]:
        return self.inner.summed_facts([call.inputs for call in calls])

    @staticmethod
    def send_args(call: Call) -> tuple[str, Sequence[Any]]:
        """What ``execute`` sends, as ``Session.send_call`` takes it: for engines with split calls, whose
        pump sends it (engines/pump.py)."""
        return call.sql, call.converted

    def execute(self, session: Session, call: Call) -> Any:
        """Run the call; return the result-file record of a deferred transaction (which the driver keeps,
        2.7.2.3), None for the others: their screens' data reach the client, and nobody reads them in a run."""
        try:
            value = session.call(call.sql, call.converted)
        except Exception as error:
            self._raise_if_by_rule(error)
            raise
        return self.deferred_result(call, value) if self.deferred else None

    def deferred_result(self, call: Call, value: Any) -> Any:
        """A deferred call's record from the first value of its result, as a pump hands it over."""
        return self.inner.deferred_result(call.inputs, value)  # type: ignore[attr-defined]  # a deferred one's

    def screen(self, session: Session, call: Call) -> Any:
        """The call's screen, every column of its result read (``Transaction.screen``): what a client-side
        run of the same inputs returns."""
        try:
            row = session.fetchone(call.sql, call.params)
        except Exception as error:
            self._raise_if_by_rule(error)
            raise
        return self.inner.screen(call.inputs, row)

    def _raise_if_by_rule(self, error: Exception) -> None:
        """The procedure's own rollback (2.4.2.3: SQLSTATE MX001) is the transaction's rule, not an error. Called
        in an ``except`` (not a context manager's: a terminal makes thousands of calls a second)."""
        if self.rolled_back_by_rule(error):
            raise RollbackByRule(str(error)) from error
