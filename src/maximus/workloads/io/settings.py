"""The io workloads' settings: the table's size and row width, which both share (they choose the database, so a
build made for one serves the other), and io-random's skew."""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass
from typing import Any, Mapping, TypeVar

from maximus import limits
from maximus.workloads.base import CommandLineSetting, SettingError

MIB = 1 << 20
TABLE_MB = limits.Limit(1, 1 << 20)  # 1 MiB to 1 TiB
# A row's columns: the 8-byte id and a payload of the rest. At most 1,024 bytes keeps every row within one page
# of every engine's smallest usual page and far below PostgreSQL's TOAST threshold (about 2 KB), past which a
# payload would be compressed out of line and the table would no longer be as large as it says.
ROW_BYTES = limits.Limit(16, 1024)
ID_BYTES = 8
DEFAULT_TABLE_MB = 1024  # a benchmark's: larger than a small buffer cache many times over
DEFAULT_ROW_BYTES = 200
UNIFORM = "uniform"
_HOT = re.compile(r"hot=(\d+(?:\.\d+)?)%:(\d+(?:\.\d+)?)%")
SKEW_FORM = "uniform, or hot=P%:Q% (the first P % of the rows get Q % of the reads), e.g. hot=10%:90%"


@dataclass(frozen=True)
class Skew:
    """Which rows io-random reads: ``hot_share`` of the rows (the lowest ids, so the first pages of the table) get
    ``hot_reads`` of the reads, the rest the others; uniform when there is no hot set."""

    hot_share: float = 0.0  # fraction of the rows
    hot_reads: float = 0.0  # fraction of the reads

    @property
    def uniform(self) -> bool:
        return self.hot_share == 0.0


def parse_skew(text: str) -> Skew:
    """``uniform`` or ``hot=P%:Q%``; ``ValueError`` with the accepted form otherwise."""
    if text == UNIFORM:
        return Skew()
    match = _HOT.fullmatch(text.replace(" ", ""))
    if match is None:
        raise ValueError(f"expected {SKEW_FORM}, got {text!r}")
    share, reads = (float(group) / 100 for group in match.groups())
    if not (0 < share < 1 and 0 < reads < 1):
        raise ValueError(f"both percentages of hot=P%:Q% must lie strictly between 0 and 100, got {text!r}")
    return Skew(share, reads)


@dataclass(frozen=True)
class TableSettings:
    """What shapes the table, shared by both workloads."""

    table_mb: int = DEFAULT_TABLE_MB  # the table's data: rows x row_bytes, in MiB
    row_bytes: int = DEFAULT_ROW_BYTES  # the id (8 bytes) and the payload (the rest)

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def rows(self) -> int:
        return self.table_mb * MIB // self.row_bytes

    @property
    def payload_bytes(self) -> int:
        return self.row_bytes - ID_BYTES

    @property
    def table_bytes(self) -> int:
        """The data the rows hold, before any engine's row and page overhead."""
        return self.rows * self.row_bytes


@dataclass(frozen=True)
class RandomSettings(TableSettings):
    skew: str = UNIFORM

    @property
    def drawn(self) -> Skew:
        return parse_skew(self.skew)


WARM, COLD = "warm", "cold"
CACHES = (WARM, COLD)


@dataclass(frozen=True)
class ScanSettings(TableSettings):
    caches: str = WARM  # cold: the OS page cache of the database's files dropped before each scan


TABLE_OPTIONS = (
    CommandLineSetting("table_mb", "--table-mb", int, "io workloads: the table's size in MiB (rows x row bytes)",
                       chooses_database=True),
    CommandLineSetting("row_bytes", "--row-bytes", int, "io workloads: bytes of each row (an 8-byte id and a "
                       "payload of the rest)", chooses_database=True),
)
SCAN_OPTIONS = TABLE_OPTIONS + (
    CommandLineSetting("caches", "--caches", str, "io-scan: warm (what the scans before left cached) or cold (the OS "
                       "page cache of the database's files dropped before each scan)"),
)
RANDOM_OPTIONS = TABLE_OPTIONS + (
    CommandLineSetting("skew", "--skew", str, f"io-random: which rows are read, {SKEW_FORM}"),
)

Parsed = TypeVar("Parsed", bound=TableSettings)


def parse_settings(kind: type[Parsed], workload: str, given: Mapping[str, Any]) -> Parsed:
    """The settings ``given``, checked one by one: an unknown key gets a "did you mean"."""
    keys = tuple(kind.__dataclass_fields__)
    for key in given:
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1)
            hint = f"did you mean {close[0]}?" if close else f"its settings are {', '.join(keys)}"
            raise SettingError(key, f"not a setting of the {workload} workload: {hint}")
    settings = kind(**given)
    for key, limit in (("table_mb", TABLE_MB), ("row_bytes", ROW_BYTES)):
        value = getattr(settings, key)
        if not limit.allows(value):
            raise SettingError(key, f"expected {limit.describe()}, got {value!r}", limit, value)
    if isinstance(settings, RandomSettings):
        _check_skew(settings.skew)
    if isinstance(settings, ScanSettings) and settings.caches not in CACHES:
        raise SettingError("caches", f"expected {' or '.join(CACHES)}, got {settings.caches!r}")
    return settings


def _check_skew(skew: object) -> None:
    if not isinstance(skew, str):
        raise SettingError("skew", f"expected {SKEW_FORM}, got {skew!r}")
    try:
        parse_skew(skew)
    except ValueError as error:
        raise SettingError("skew", str(error)) from None
