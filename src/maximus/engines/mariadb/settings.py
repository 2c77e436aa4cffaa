"""MariaDB's system variables as Maximus reads and writes them: a variable's type and bounds as the server's own
``information_schema.SYSTEM_VARIABLES`` describes it (``MariaValue``), and the knob catalogue made of them.

The catalogue is the server's: every variable a DBA can set, at startup (an option of the option file) or at
run time (``SET GLOBAL``), with the server's own bounds and choices. Two knobs are Maximus's own: ``log_bin``,
the binary log, a command-line option of the server that no variable sets, and ``innodb_page_size``, which
the data directory is created with (a build of its own, as PostgreSQL's creation-time knobs get).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from maximus.errors import UserError
from maximus.knobs import Applies, Knob, KnobCatalogue, one_line, spelled

_BOOLEANS = {"on": "ON", "off": "OFF", "1": "ON", "0": "OFF", "true": "ON", "false": "OFF", "yes": "ON", "no": "OFF"}
# An option file's size suffixes (mariadbd --help: "K, M, G, T, P, E").
_SUFFIX = {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4, "p": 1024 ** 5, "e": 1024 ** 6}
_NUMBER = re.compile(r"^\s*(-?\d+)\s*([kmgtpeKMGTPE]?)\s*$")
# A number as MariaDB reads one, in a statement and in an option file alike: 5, -5, +5, 0.5, .5, 5., 1e-3, .5E+1
_DECIMAL = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")
_INTEGERS = ("INT", "INT UNSIGNED", "BIGINT", "BIGINT UNSIGNED")

LOG_BIN = "log_bin"  # the binary log: the server's --log-bin option, which no variable sets
PAGE_SIZE = "innodb_page_size"  # fixed when the data directory is created
PAGE_SIZES = ("4096", "8192", "16384", "32768", "65536")
# Values that make a commit less than durable (docs/mariadb.md). sync_binlog counts only with the binary log on:
# ``MariaDBEngine.durability_warnings`` checks the pair.
DURABILITY = {"innodb_flush_log_at_trx_commit": {"0", "2"}, "innodb_doublewrite": {"OFF"},
              "innodb_flush_method": {"nosync", "littlesync"}}  # both skip fsync: MariaDB's testing-only values
SYNC_BINLOG = "sync_binlog"
# Values under which InnoDB takes no write at all, where a benchmark writes: a build's rows, every run's restore and
# transactions. (read_only=ON is not one: it spares a user with the READ ONLY ADMIN privilege, as Maximus's root.)
READ_ONLY = {"innodb_read_only": "ON"}
# What Maximus chooses itself for a managed server: where it lives and how it is reached.
OWNED = ("datadir", "socket", "pid_file", "log_error", "bind_address", "basedir", "port", "skip_networking",
         "skip_grant_tables", "plugin_dir", "tmpdir", "innodb_data_home_dir", "innodb_log_group_home_dir",
         "innodb_undo_directory")


@dataclass(frozen=True)
class MariaValue:
    """A system variable's type as ``information_schema.SYSTEM_VARIABLES`` gives it: VARIABLE_TYPE, the numeric
    bounds, and the list of an ENUM's, SET's or BOOLEAN's values. Values keep the server's own spelling."""

    vartype: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    option: bool = True  # the server takes it as a startup option (an option-file line), not only by SET GLOBAL

    def parse(self, raw: str) -> str:
        text = one_line(raw)
        if self.vartype == "BOOLEAN":
            return spelled(text, _BOOLEANS, "ON or OFF")
        if self.vartype == "ENUM":
            return self._choice(text)
        if self.vartype == "SET":
            return ",".join(self._choice(part.strip()) for part in text.split(",") if part.strip())
        if self.vartype in _INTEGERS:
            value = self._integer(text)
            if not self._within(value) or (self.choices and str(value) not in self.choices):
                raise ValueError(f"expected {'one of ' if self.choices else ''}{self.describe()}")
            return str(value)
        if self.vartype == "DOUBLE":
            if not _DECIMAL.fullmatch(text):
                raise ValueError(f"expected a number {self.describe()}")
            if not self._within(float(text)):
                raise ValueError(f"expected {self.describe()}")
        return text

    def _within(self, value: float) -> bool:
        return (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)

    def _choice(self, text: str) -> str:
        return spelled(text, {value.lower(): value for value in self.choices}, f"one of {', '.join(self.choices)}")

    @staticmethod
    def _integer(text: str) -> int:
        match = _NUMBER.match(text)
        if not match:
            raise ValueError("expected an integer, with K, M or G for sizes (64M)")
        return int(match.group(1)) * _SUFFIX[match.group(2).lower()]

    def same(self, asked: str, reported: str) -> bool:
        """Whether SHOW VARIABLES' ``reported`` is the ``asked`` value: numbers as numbers (``64M`` is 67108864),
        choices in any case."""
        try:
            if self.vartype in _INTEGERS:
                return self._integer(asked) == self._integer(reported)
            if self.vartype == "DOUBLE":
                return math.isclose(float(asked), float(reported), rel_tol=1e-6)
            if self.vartype in ("BOOLEAN", "ENUM", "SET"):
                return self.parse(asked).lower() == self.parse(reported).lower()
        except ValueError:
            pass
        return asked.strip().lower() == reported.strip().lower()

    def describe(self) -> str:
        if self.choices:
            return ", ".join(self.choices)
        if self.minimum is not None or self.maximum is not None:
            return f"between {_exact(self.minimum)} and {_exact(self.maximum)}"
        return self.vartype.lower()


def _exact(value: float | None) -> str:
    return "" if value is None else str(int(value)) if float(value).is_integer() else f"{value:.15g}"


def catalogue_of(rows: Iterable[Mapping[str, Any]]) -> KnobCatalogue:
    """The variables of ``rows`` (SYSTEM_VARIABLES) that can be set: at run time (not READ_ONLY), or at startup
    (a command-line option, hence an option-file line); and Maximus's own ``log_bin``."""
    # a session-only variable (timestamp, insert_id, …) is a connection's state, not a knob of the server
    knobs = [_knob(row) for row in rows if row["VARIABLE_SCOPE"] != "SESSION ONLY"
             and (row["READ_ONLY"] == "NO" or row["COMMAND_LINE_ARGUMENT"] is not None)]
    knobs.append(Knob(LOG_BIN, MariaValue("BOOLEAN", choices=("OFF", "ON")), "OFF", Applies.RESTART,
                      "The binary log (the server's --log-bin option): with it on, sync_binlog decides whether "
                      "commits are durable"))
    return KnobCatalogue("mariadb", knobs)


def _knob(row: Mapping[str, Any]) -> Knob:
    name = row["VARIABLE_NAME"].lower()
    value_type = MariaValue(_vartype(row), _float(row["NUMERIC_MIN_VALUE"]), _float(row["NUMERIC_MAX_VALUE"]),
                            _choices(row), row["COMMAND_LINE_ARGUMENT"] is not None)
    if name == PAGE_SIZE:  # a size, as mariadbd takes it (64k, 4K, 16384), of the five InnoDB pages come in
        value_type, applies = MariaValue("INT UNSIGNED", choices=PAGE_SIZES), Applies.CREATION
    elif row["READ_ONLY"] == "YES":
        applies = Applies.RESTART
    else:
        applies = Applies.RELOAD
    default = row["DEFAULT_VALUE"] if row["DEFAULT_VALUE"] is not None else ""
    return Knob(name, value_type, default, applies, row.get("VARIABLE_COMMENT") or name,
                weakens_durability_when=frozenset(DURABILITY.get(name, ())))


def _choices(row: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(row["ENUM_VALUE_LIST"].split(",")) if row["ENUM_VALUE_LIST"] else ()


def _vartype(row: Mapping[str, Any]) -> str:
    """The variable's type; an ENUM whose values SYSTEM_VARIABLES does not list is text. MariaDB lists none for
    a character set, a collation or a locale (``character_set_server``, ``collation_server``, ``lc_messages``):
    their values are the server's character sets and collations, which the server itself checks when it is set."""
    if row["VARIABLE_TYPE"] == "ENUM" and not _choices(row):
        return "VARCHAR"
    return row["VARIABLE_TYPE"]


def _float(value: Any) -> float | None:
    return None if value in (None, "") else float(value)


def read_only(settings: Mapping[str, str]) -> str | None:
    """``innodb_read_only=ON`` when ``settings`` (the run's knobs, or what a server reports) make the server refuse
    every write, where a benchmark writes: its build, its restores, its transactions."""
    return next((f"{name}={value}" for name, value in READ_ONLY.items() if settings.get(name) == value), None)


def refuse_read_only(settings: Mapping[str, str]) -> None:
    """A one-line ``UserError`` for knobs that would make the server refuse every write, before anything runs."""
    asked = read_only(settings)
    if asked:
        raise UserError(f"{asked} makes the MariaDB server refuse every write, and a benchmark writes (its build, its "
                        "restores, its transactions): drop the knob")


def option_line(name: str, value: str) -> str:
    """``name = value`` as an option file takes it (a SET's list, a path with spaces: quoted)."""
    if value == "" or re.search(r"[\s#;'\"\\]", value):
        return f"{name} = \"{value.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}\""
    return f"{name} = {value}"


def set_global(name: str, value: str | None, knobs: KnobCatalogue) -> str:
    """``SET GLOBAL name = value``, the value written for the variable's type (``sql_value``); NULL is put back as
    NULL, not as ''."""
    return f"SET GLOBAL {name} = {'NULL' if value is None else sql_value(value, _type(knobs, name).vartype)}"


def _type(knobs: KnobCatalogue, name: str) -> MariaValue:
    """A variable's type in a MariaDB catalogue (every knob's but log_bin's)."""
    kind = knobs.get(name).type
    if not isinstance(kind, MariaValue):
        raise TypeError(f"{name} is not one of MariaDB's variables")
    return kind


def sql_value(value: str, vartype: str) -> str:
    """A value of a variable of type ``vartype`` (``MariaValue.vartype``) in ``SET GLOBAL name = value``: a number
    as it is, as a numeric or boolean variable requires (it refuses '1e-3' or '1'); anything else, and any value of
    a text variable (which refuses a number), a quoted string."""
    if vartype != "VARCHAR" and _DECIMAL.fullmatch(value):
        return value.strip()
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
