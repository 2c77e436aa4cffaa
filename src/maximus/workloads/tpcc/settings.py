"""TPC-C's own settings, as the command line and the experiment file give them and every run records them."""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from maximus import limits
from maximus.errors import UserError
from maximus.workloads.base import CommandLineSetting, SettingError
from maximus.workloads.tpcc.mix import parse_mix

WAREHOUSES = limits.Limit(1, 10_000)  # about 90 MB each on SQLite: 10,000 fill about 0.9 TB per copy


@dataclass(frozen=True)
class TpccSettings:
    warehouses: int = 1  # the scale (4.2.2): 10 districts, 30,000 customers, 100,000 stock rows each
    keying: bool = False  # keying and think times (5.2.5); off, a run is TPC-C-like
    mix: str = "deck"  # the 23-card deck (5.2.4.2), or weights such as new_order=45,payment=43,...

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)


KEYS = tuple(TpccSettings.__dataclass_fields__)

# `maximus run` offers each of them; `load` and `check` the scale, which tells the database apart
OPTIONS = (
    CommandLineSetting("warehouses", "--warehouses", int, "TPC-C's scale: number of warehouses", short="-w",
                       chooses_database=True),
    CommandLineSetting("keying", "--keying", bool, "TPC-C: keying and think times of 5.2.5 (off: TPC-C-like)"),
    CommandLineSetting("mix", "--mix", str, "TPC-C: deck (23 cards, 5.2.4.2) or weights such as "
                       "new_order=45,payment=43,order_status=4,delivery=4,stock_level=4"),
)


def parse_settings(given: Mapping[str, Any]) -> TpccSettings:
    """The settings ``given``, checked one by one: an unknown key gets a "did you mean"."""
    for key in given:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f"did you mean {close[0]}?" if close else f"TPC-C's settings are {', '.join(KEYS)}"
            raise SettingError(key, f"not a setting of the tpcc workload: {hint}")
    settings = TpccSettings(**given)
    if not WAREHOUSES.allows(settings.warehouses):
        raise SettingError("warehouses", f"expected {WAREHOUSES.describe()}, got {settings.warehouses!r}",
                           WAREHOUSES, settings.warehouses)
    if not isinstance(settings.keying, bool):
        raise SettingError("keying", f"expected true or false, got {settings.keying!r}")
    if not isinstance(settings.mix, str):
        raise SettingError("mix", f"expected a string, got {settings.mix!r}")
    try:
        parse_mix(settings.mix)
    except UserError as error:
        raise SettingError("mix", str(error)) from None
    return settings
