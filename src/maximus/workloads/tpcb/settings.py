"""TPC-B's own settings, as the command line and the experiment file give them and every run records them."""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from maximus import limits
from maximus.workloads.base import CommandLineSetting, SettingError

SCALE = limits.Limit(1, 100_000)  # about 15 MB a branch on PostgreSQL, as pgbench's scale factor
ACCOUNTS_PER_BRANCH = limits.Limit(1, 10_000_000)
STANDARD_ACCOUNTS_PER_BRANCH = 100_000  # pgbench's, and TPC-B's (1 branch : 10 tellers : 100,000 accounts)
TELLERS_PER_BRANCH = 10


@dataclass(frozen=True)
class TpcbSettings:
    scale: int = 1  # branches: 10 tellers and ``accounts_per_branch`` accounts each, as pgbench's -s
    accounts_per_branch: int = STANDARD_ACCOUNTS_PER_BRANCH  # fewer make small test databases, not a standard one

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def standard(self) -> bool:
        return self.accounts_per_branch == STANDARD_ACCOUNTS_PER_BRANCH


KEYS = tuple(TpcbSettings.__dataclass_fields__)

# Both choose which database is built: `load` and `check` take them as well as `run`
OPTIONS = (
    CommandLineSetting("scale", "--scale", int, "TPC-B's scale: number of branches, as pgbench's -s",
                       chooses_database=True),
    CommandLineSetting("accounts_per_branch", "--accounts-per-branch", int,
                       "TPC-B: accounts of each branch (fewer than 100000 make a small, non-standard database)",
                       chooses_database=True),
)


def parse_settings(given: Mapping[str, Any]) -> TpcbSettings:
    """The settings ``given``, checked one by one: an unknown key gets a "did you mean"."""
    for key in given:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"did you mean {close[0]}?" if close else f"TPC-B's settings are {', '.join(KEYS)}"
            raise SettingError(key, f"not a setting of the tpcb workload: {hint}")
    settings = TpcbSettings(**given)
    for key, limit in (("scale", SCALE), ("accounts_per_branch", ACCOUNTS_PER_BRANCH)):
        value = getattr(settings, key)
        if not limit.allows(value):
            raise SettingError(key, f"expected {limit.describe()}, got {value!r}", limit, value)
    return settings
