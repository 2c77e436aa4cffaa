"""The TPC-B transaction as pgbench's default script ("TPC-B (sort of)") runs it: add a random delta to an
account's balance and read it, add it to a teller's and a branch's, and record it in the history.

The account, the teller and the branch are drawn independently and uniformly, as pgbench draws them, so that a
run compares with pgbench's at the same scale and clients. TPC-B itself takes the teller's branch and, 85 % of the
time, an account of that branch: with independent draws only the totals agree (``consistency``), not each branch's.

The statements go out in one batch with the transaction's BEGIN and COMMIT (one round trip on a server engine, where
pgbench sends each statement on its own): the same work, with less waiting on the network.
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple, Sequence

from maximus.engines.base import Dialect, Session
from maximus.workloads.statements import Part, Split, Statement, batch, for_dialect
from maximus.workloads.tpcb.settings import TELLERS_PER_BRANCH

DELTA = (-5000, 5000)  # pgbench's :delta, both ends included

SQL: dict[str, Statement] = {  # what SQLite and PostgreSQL run
    "account": "UPDATE accounts SET abalance = abalance + ? WHERE aid = ? RETURNING abalance",
    "teller": "UPDATE tellers SET tbalance = tbalance + ? WHERE tid = ?",
    "branch": "UPDATE branches SET bbalance = bbalance + ? WHERE bid = ?",
}
# MariaDB returns no rows from an UPDATE: the account is read after its change, by its key, as pgbench's script does
OVERRIDES: dict[str, dict[str, Statement]] = {"mariadb": {"account": Split((
    Part("UPDATE accounts SET abalance = abalance + ? WHERE aid = ?", (0, 1), returns=False),
    Part("SELECT abalance FROM accounts WHERE aid = ?", (1,), returns=True)))}}


class BalanceUpdateInput(NamedTuple):
    aid: int
    tid: int
    bid: int
    delta: int


class BalanceUpdate:
    name = "balance_update"
    read_only = False
    deferred = False
    one_snapshot = False
    isolation_means = "each balance changed by one UPDATE that adds to it, the account's read after its change"

    def __init__(self, dialect: Dialect) -> None:
        self.sql = for_dialect(SQL, OVERRIDES, dialect.name)
        self.history_sql = f"INSERT INTO history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, {dialect.utc_now})"

    @staticmethod
    def draw(rng: random.Random, branches: int, accounts_per_branch: int) -> BalanceUpdateInput:
        """pgbench's draws: account, branch and teller each uniform over the whole database, and the delta."""
        return BalanceUpdateInput(rng.randint(1, branches * accounts_per_branch),
                                  rng.randint(1, branches * TELLERS_PER_BRANCH), rng.randint(1, branches),
                                  rng.randint(*DELTA))

    def execute(self, session: Session, inputs: BalanceUpdateInput) -> int:
        """The account's new balance, which the script reads."""
        aid, tid, bid, delta = inputs
        account, _, _, _ = batch(session, [(self.sql["account"], (delta, aid)), (self.sql["teller"], (delta, tid)),
                                           (self.sql["branch"], (delta, bid)),
                                           (self.history_sql, (tid, bid, aid, delta))], last=True)
        if not account:
            raise LookupError(f"no account {aid}: the database is not a TPC-B database of this scale")
        return int(account[0][0])

    def summed_facts(self, inputs: Sequence[Any]) -> dict[str, int]:
        return {}
