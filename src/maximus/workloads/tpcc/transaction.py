"""What every TPC-C transaction module provides, and what a terminal knows about itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.tpcc.constants import TERMINALS_PER_WAREHOUSE
from maximus.workloads.tpcc.random import TpccRandom
from maximus.workloads.tpcc.screens import money


@dataclass(frozen=True)
class Home:
    """A terminal's fixed home (4.2.2, 2.8.1.1) and the scale it runs against."""

    w_id: int
    d_id: int
    warehouses: int


def home_of(terminal: int, warehouses: int) -> Home:
    """4.2.2 and 2.8.1.1: terminals are dealt over the warehouses in turn, each with its own district.

    With the full ten terminals per warehouse every (warehouse, district) pair has one terminal;
    with fewer, every warehouse still gets its share, as it would in a scaled-down real system, rather
    than the first warehouse taking them all and serialising every Payment on its one row.
    """
    return Home(terminal % warehouses + 1, terminal // warehouses % TERMINALS_PER_WAREHOUSE + 1, warehouses)


class Transaction(Protocol):
    """One TPC-C transaction type: draws its input (clause 2.x.1), executes it (2.x.2) and returns the data
    of its output screen (2.x.3, ``screens``).

    ``deferred`` transactions are queued by the terminal and executed later by a deferred worker
    (2.7.2); their acknowledgement and their completion are timed separately, and what they return is
    the record of their result file (2.7.2.3).

    Isolation (3.4.0.1, Table 3-1): New-Order, Payment and Delivery lock every row they read and then
    change before they read it (``Dialect.for_update``, or an UPDATE that returns what it changed), so
    at read committed they see no P0-P3 between them; ``one_snapshot`` transactions read several tables
    and must see one committed state (Order-Status), which the engine gives them (``Session.begin``);
    ``isolation_means`` says how, for the run's record.
    """

    # Each class says these once for all its objects (class attributes): a protocol's plain members, which a class
    # attribute satisfies where a ClassVar member would need the classes to say ClassVar too.
    name: str
    read_only: bool
    deferred: bool
    one_snapshot: bool
    isolation_means: str
    call_sql: str  # the statement ``call`` gives, in the dialect's SQL (``sql/``)

    def __init__(self, dialect: Dialect) -> None: ...

    def draw(self, rng: TpccRandom, home: Home) -> Any: ...

    def execute(self, session: Session, inputs: Any) -> Any:
        """Run the profile of clause 2 client-side, in the caller's transaction; return the screen."""

    def screen(self, inputs: Any, row: tuple | None) -> Any:
        """The screen from the row the stored procedure of ``call`` returns (all its columns), as the session gives
        it: a function that returns a row reads it with ``sql.function_row`` (MariaDB's is one JSON array)."""

    def summed_facts(self, inputs: Sequence[Any]) -> dict[str, int]:
        """Counts the validity bands of 5.5.1.5 need, summed over ``inputs``, e.g. {"remote": 3}: a busy
        terminal sums a batch's at once (``driver.terminal.Recorder``)."""

    def call(self, inputs: Any) -> tuple[str, tuple]:
        """The stored-function call that does the same work server-side (see sql/<dialect>.sql)."""


SERVER_UTC_NOW = "(now() AT TIME ZONE 'UTC')"
"""The server's current UTC time in a stored-function call as PostgreSQL writes it (``sql/mariadb.py`` has
MariaDB's): a call can be drawn ahead of its execution (``TerminalEmulator``) and still be stamped when it runs
(4.3.3.1: current date/time). The client-side statements take the same clock from ``Dialect.utc_now``."""


def datetime_of(value: Any) -> Any:
    """A date in a stored function's row as the datetime a table's column reads as: a function that returns its
    row as JSON (MariaDB's, ``sql/mariadb.sql``) writes it as text ("2024-05-01 12:00:00.123456")."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def to_sql_money(cents: int, in_cents: bool) -> int | Decimal:
    """An amount as the schema stores it: integer cents where the dialect keeps money so, else a decimal."""
    return cents if in_cents else money(cents)


def cents_of(value: Any, in_cents: bool) -> int:
    """An amount read from the database, in integer cents."""
    return int(value) if in_cents else int(Decimal(value).scaleb(2))


def by_name(columns: str) -> str:
    """The customers of a district with a last name, in C_FIRST order (2.5.2.2, 2.6.2.2): ``columns`` of each."""
    return f"SELECT {columns} FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first"


def one_row(row: tuple | None, what: str) -> tuple:
    """A row the transaction's inputs guarantee (its keys exist, 2.x.1): none is a database that is not TPC-C's."""
    if row is None:
        raise LookupError(f"no {what}: the database is not a TPC-C database of this scale")
    return row


def middle(rows: Sequence[tuple], w_id: int, d_id: int, c_last: str | None) -> tuple:
    """2.5.2.2 / 2.6.2.2: of the customers with this last name sorted by C_FIRST, the one at ⌈n/2⌉."""
    if not rows:
        raise LookupError(f"no customer named {c_last} in warehouse {w_id} district {d_id}")
    return rows[(len(rows) - 1) // 2]
