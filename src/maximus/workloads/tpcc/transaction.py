"""What every TPC-C transaction module provides, and what a terminal knows about itself."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.random import TpccRandom


@dataclass(frozen=True)
class Home:
    """A terminal's fixed home (4.2.2, 2.8.1.1) and the scale it runs against."""

    w_id: int
    d_id: int
    warehouses: int


class Transaction(Protocol):
    """One TPC-C transaction type: draws its input (clause 2.x.1), executes it (2.x.2).

    ``deferred`` transactions are queued by the terminal and executed later by a deferred worker
    (2.7.2); their acknowledgement and their completion are timed separately.
    """

    name: ClassVar[str]
    read_only: ClassVar[bool]
    deferred: ClassVar[bool]
    call_sql: ClassVar[str]  # the statement ``call`` gives

    def __init__(self, dialect: Dialect) -> None: ...

    def draw(self, rng: TpccRandom, home: Home) -> Any: ...

    def execute(self, session: Session, inputs: Any) -> None: ...

    def summed_facts(self, inputs: Sequence[Any]) -> dict[str, int]:
        """Counts the validity bands of 5.5.1.5 need, summed over ``inputs``, e.g. {"remote": 3}: a busy
        terminal sums a batch's at once (``driver.terminal.Recorder``)."""

    def call(self, inputs: Any) -> tuple[str, tuple]:
        """The stored-function call that does the same work server-side (see sql/<dialect>.sql)."""


SERVER_UTC_NOW = "(now() AT TIME ZONE 'UTC')"
"""The server's current UTC time in a stored-function call: a call can be drawn ahead of its execution
(``TerminalEmulator``) and still be stamped when it runs (4.3.3.1: current date/time)."""


def now_text() -> str:
    """The current UTC time, in the same form the loader writes dates (4.3.3.1: current date/time)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())


def customer_by_name(session: Session, w_id: int, d_id: int, c_last: str) -> int:
    """2.5.2.2 / 2.6.2.2: of the customers with this last name sorted by C_FIRST, the one at ⌈n/2⌉."""
    rows = session.fetchall("SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? "
                            "ORDER BY c_first", (w_id, d_id, c_last))
    if not rows:
        raise LookupError(f"no customer named {c_last} in warehouse {w_id} district {d_id}")
    return rows[(len(rows) - 1) // 2][0]
