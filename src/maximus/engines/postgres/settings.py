"""PostgreSQL's settings as Maximus reads and writes them: a GUC's type and units (``PgValue``), and which
installation's binaries run a managed server (``find_bin_dir``, ``full_version``)."""

from __future__ import annotations

import glob
import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

from maximus.engines import _process
from maximus.errors import UserError
from maximus.knobs import Knob, one_line, spelled

_BOOLEANS = {"on": "on", "off": "off", "true": "on", "false": "off", "yes": "on", "no": "off", "1": "on",
             "0": "off", "t": "on", "f": "off"}
_MEMORY_KB = {"b": 1 / 1024, "kb": 1, "mb": 1024, "gb": 1024 ** 2, "tb": 1024 ** 3}
_SPELLING = {"b": "B", "kb": "kB", "mb": "MB", "gb": "GB", "tb": "TB"}  # postgresql.conf's
_TIME_MS = {"us": 0.001, "ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
BIN_DIR = "bin_dir"  # a knob of Maximus's, not a GUC: which installation runs a managed server
_SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")


@dataclass(frozen=True)
class PgValue:
    """A GUC's type as pg_settings describes it; values keep PostgreSQL's own syntax (e.g. ``2GB``)."""

    vartype: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    enumvals: tuple[str, ...] = ()

    def parse(self, raw: str) -> str:
        text = one_line(raw, ", which postgresql.conf cannot hold")
        if self.vartype == "bool":
            return spelled(text, _BOOLEANS, "on or off")
        if self.vartype == "enum":  # PostgreSQL's spelling, e.g. TLSv1.2
            return spelled(text, {value.lower(): value for value in self.enumvals}, f"one of {self.describe()}")
        if self.vartype in ("integer", "real"):
            self._check_number(text)
        return text

    def _check_number(self, text: str) -> None:
        value = self._amount(text)
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise ValueError(f"expected {self.describe()}")

    def _amount(self, text: str) -> float:
        """``text`` (``2GB``, ``15min``, ``0.9``) in the GUC's own units."""
        match = _NUMBER.match(text)
        if not match:
            raise ValueError(f"expected a number{self._unit_hint()}")
        return float(match.group(1)) * self._scale(match.group(2))

    def same(self, asked: str, reported: str) -> bool:
        """Whether ``SHOW``'s ``reported`` value is the ``asked`` one: numbers in the GUC's units (``2048MB`` is
        ``2GB``), where a negative one asks the server to compute it (``wal_buffers = -1``); the server's
        spelling of a string is not a change (``utc`` is shown ``UTC``)."""
        try:
            if self.vartype in ("integer", "real"):
                wanted = self._amount(asked)
                return wanted < 0 or math.isclose(wanted, self._amount(reported), rel_tol=1e-9)
            if self.vartype in ("bool", "enum"):
                return self.parse(asked) == self.parse(reported)
        except ValueError:
            pass
        return asked.strip().lower() == reported.strip().lower()

    def _scale(self, given: str) -> float:
        """How many of the GUC's own units one ``given`` unit is."""
        if not given:
            return 1.0
        table, own = self._units()
        if given.lower() not in table or own is None:
            raise ValueError(f"unit {given!r} does not fit{self._unit_hint()}")
        return table[given.lower()] / own

    def _units(self) -> tuple[Mapping[str, float], float | None]:
        """The table of units of the GUC's kind (memory in kB, time in ms), and its own unit in that table's
        measure (``8kB`` is 8); None when the table does not know it."""
        table = _MEMORY_KB if self.unit.lower().endswith("b") else _TIME_MS
        base_unit = self.unit.lower().lstrip("0123456789")
        multiple = float(self.unit[:-len(base_unit)] or 1) if base_unit else 1.0
        return table, table[base_unit] * multiple if base_unit in table else None

    def _unit_hint(self) -> str:
        return f" (unit {self.unit})" if self.unit else ""

    def describe(self) -> str:
        if self.enumvals:
            return ", ".join(self.enumvals)
        if self.vartype == "bool":
            return "on or off"
        if self.minimum is not None:
            spelled = f"between {_exact(self.minimum)} and {_exact(self.maximum)}{self._unit_hint()}"
            scaled = [self._spelled(self.minimum), self._spelled(self.maximum)]
            return spelled + (f", {scaled[0]} to {scaled[1]}" if None not in scaled else "")
        return self.vartype

    def _spelled(self, value: float | None) -> str | None:
        """``value`` of the GUC's units in the largest unit that keeps it at least 1, as postgresql.conf takes
        it (``128kB``, ``8TB``, ``1d``); None for a GUC without a unit or a negative value."""
        if value is None or value < 0:
            return None
        return "0" if value == 0 and self.unit else self._in_largest_unit(value, lambda amount: amount >= 1)

    def spelled_exactly(self, raw: str) -> str:
        """``raw`` of the GUC's units in the largest unit that divides it, as postgresql.conf.sample writes a
        default (shared_buffers' 16384 pages are ``128MB``, checkpoint_timeout's 300 s ``5min``); unchanged
        without a unit or when not positive (``-1`` often means "computed from another setting")."""
        try:
            value = float(raw)
        except ValueError:
            return raw
        spelled = self._in_largest_unit(value, float.is_integer) if value > 0 else None
        return spelled or raw

    def _in_largest_unit(self, value: float, fits: Callable[[float], bool]) -> str | None:
        """``value`` (positive, of the GUC's units) in the largest unit of its kind whose amount ``fits``."""
        table, own = self._units()
        if not self.unit or own is None:
            return None
        amounts = {unit: value * own / table[unit] for unit in table}
        unit = max((u for u in table if fits(amounts[u])), key=table.__getitem__, default=None)
        if unit is None:
            return None
        amount = amounts[unit]
        return (f"{amount:.4g}" if amount < 10_000 else f"{amount:.0f}") + _SPELLING.get(unit, unit)


def _exact(value: float | None) -> str:
    """``1073741823``, not ``1.07374e+09``: an integer setting's bound as pg_settings gives it."""
    return "" if value is None else str(int(value)) if float(value).is_integer() else f"{value:.15g}"


def find_bin_dir(given: str | None = None) -> Path:
    """``bin_dir`` if given (made absolute), else ``pg_config --bindir``, else the newest
    ``/usr/lib/postgresql/*/bin``."""
    if given:
        if not all((Path(given) / name).exists() for name in _SERVER_BINARIES):
            raise UserError(f"no PostgreSQL server binaries ({', '.join(_SERVER_BINARIES)}) in {given}")
        return Path(os.path.abspath(given))  # not resolved: another name for an installation stays its own
    return _discovered_bin_dir()


@lru_cache(maxsize=1)
def _discovered_bin_dir() -> Path:
    """Asked once per process: every path of a managed cluster (its data directory is named by the version)
    comes through here, and ``pg_config`` is a process of its own."""
    candidates = []
    if shutil.which("pg_config"):
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(found.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for candidate in candidates:
        if candidate and all((Path(candidate) / name).exists() for name in _SERVER_BINARIES):
            return Path(candidate)
    raise UserError(f"no PostgreSQL server binaries ({', '.join(_SERVER_BINARIES)}) found through pg_config or "
                    "in /usr/lib/postgresql/*/bin: install postgresql or pass --bin-dir")


@dataclass(frozen=True)
class BinDirValue:
    """The ``bin_dir`` knob: a directory with a PostgreSQL installation's server binaries."""

    def parse(self, raw: str) -> str:
        try:
            return str(find_bin_dir(raw.strip()))
        except UserError as error:
            raise ValueError(str(error)) from None

    def describe(self) -> str:
        return "a directory with initdb, pg_ctl and postgres"


def _version_key(path: str) -> float:
    match = re.search(r"/(\d+(?:\.\d+)?)/bin", path)
    return float(match.group(1)) if match else 0.0


@lru_cache(maxsize=8)
def full_version(bin_dir: Path) -> str:
    """The server binaries' version, asked once per directory (the data directory's name depends on it):
    ``postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`` gives ``15.18``."""
    found = _process.run([str(bin_dir / "postgres"), "--version"], "postgres --version")
    match = re.search(r"\(PostgreSQL\) (\S+)", found)
    return match.group(1) if match else found.strip().split()[-1]


def major(bin_dir: Path) -> str:
    return full_version(bin_dir).split(".")[0]


def plain_version(reported: str) -> str:
    """``15.18`` of the server's ``15.18 (Debian 15.18-0+deb12u1)``."""
    return reported.split()[0] if reported.strip() else reported


def written(knob: Knob, setting: str) -> str:
    return knob.type.spelled_exactly(setting) if isinstance(knob.type, PgValue) else setting


def server_knobs(settings: Mapping[str, str]) -> dict[str, str]:
    """The run's knobs that are the server's settings: not ``bin_dir``, which chooses the server."""
    return {name: value for name, value in settings.items() if name != BIN_DIR}
