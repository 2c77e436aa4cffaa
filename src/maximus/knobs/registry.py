"""Typed knob descriptors: name, value type, unit, default, when it applies, durability risk.

A catalogue validates a user's ``name=value`` pairs before anything runs, so ``cache_sise=1`` fails at
once with "did you mean cache_size?" instead of minutes into a run.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Iterable, Mapping, Protocol

from maximus.errors import UserError


class Applies(StrEnum):
    """When a changed knob takes effect."""

    CREATION = "creation"  # only when the database is built: changing it means a rebuild
    RESTART = "restart"  # server restart
    RELOAD = "reload"  # configuration reload
    CONNECTION = "connection"  # every new connection sets it


class ValueType(Protocol):
    def parse(self, raw: str) -> str:
        """Return the canonical value or raise ValueError with what is allowed."""

    def describe(self) -> str:
        """Allowed values, for documentation and error messages."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(raw: str, why: str = "") -> str:
    """``raw`` stripped, refused when it has a newline or another control character: a server's configuration file
    (an option file, postgresql.conf) ends a line there, or mangles it; ``why`` adds the file's own reason."""
    if _CONTROL.search(raw):
        raise ValueError(f"expected a value without a newline or other control character{why}")
    return raw.strip()


def spelled(text: str, spellings: Mapping[str, str], expected: str) -> str:
    """``text`` as ``spellings`` (keyed in lower case) writes it, taken in any case; else "expected ..."."""
    if text.lower() not in spellings:
        raise ValueError(f"expected {expected}")
    return spellings[text.lower()]


@dataclass(frozen=True)
class Choice:
    values: tuple[str, ...]
    aliases: Mapping[str, str] = field(default_factory=dict)

    def parse(self, raw: str) -> str:
        value = raw.strip().lower()
        value = self.aliases.get(value, value)
        if value not in self.values:
            raise ValueError(f"expected one of {self.describe()}")
        return value

    def describe(self) -> str:
        return ", ".join(self.values)


@dataclass(frozen=True)
class Integer:
    minimum: int | None = None
    maximum: int | None = None
    power_of_two: bool = False

    def parse(self, raw: str) -> str:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError(f"expected an integer {self.describe()}") from None
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"expected an integer {self.describe()}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"expected an integer {self.describe()}")
        if self.power_of_two and (value <= 0 or value & (value - 1)):
            raise ValueError(f"expected a power of two {self.describe()}")
        return str(value)

    def describe(self) -> str:
        low = "" if self.minimum is None else str(self.minimum)
        high = "" if self.maximum is None else str(self.maximum)
        return f"in [{low}..{high}]" if low or high else "(any integer)"


_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
               "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(raw: str) -> int:
    """Bytes in ``raw`` such as ``64MB``, ``8k`` or ``1048576`` (binary units: 1 MB = 1 MiB)."""
    match = _SIZE.match(raw)
    if not match or match.group(2).lower() not in _SIZE_UNITS:
        raise ValueError("expected a size such as 65536, 64KB, 128MB or 2GB")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


@dataclass(frozen=True)
class Size:
    """A size in bytes, given with or without a unit; the canonical value is bytes."""

    maximum: int | None = None

    def parse(self, raw: str) -> str:
        value = parse_size(raw)
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"expected a size of at most {self.maximum} bytes")
        return str(value)

    def describe(self) -> str:
        return "a size such as 65536, 64KB, 128MB or 2GB"


@dataclass(frozen=True)
class Knob:
    """One tunable setting of an engine."""

    name: str
    type: ValueType
    default: str
    applies: Applies
    description: str
    unit: str = ""
    weakens_durability_when: frozenset[str] = frozenset()

    def parse(self, raw: object) -> str:
        try:
            return self.type.parse(str(raw))
        except ValueError as error:
            raise UserError(f"bad value {raw!r} for knob {self.name}: {error}") from None

    def means(self, asked: str, reported: str) -> bool:
        """Whether the value the engine reports is the one asked, each read as the knob reads a value (SQLite
        reports ``synchronous=full`` as 2); where the type cannot read one, the texts are compared."""
        same = getattr(self.type, "same", None)
        if same is not None:
            return same(asked, reported)
        try:
            return self.type.parse(str(asked)) == self.type.parse(str(reported))
        except ValueError:
            return str(asked).strip().lower() == str(reported).strip().lower()

    def weakens_durability(self, value: str) -> bool:
        return value in self.weakens_durability_when


class KnobCatalogue:
    """The knobs one engine understands, validating user settings by name and value."""

    def __init__(self, engine: str, knobs: Iterable[Knob]) -> None:
        self.engine = engine
        self._knobs = {knob.name: knob for knob in knobs}
        # SQLite's pragmas and PostgreSQL's settings ignore case (PostgreSQL spells some DateStyle, TimeZone)
        self._folded = {name.lower(): knob for name, knob in self._knobs.items()}

    def __iter__(self):
        return iter(self._knobs.values())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._folded

    def get(self, name: str) -> Knob:
        """The knob called ``name``, in any case."""
        knob = self._knobs.get(name) or self._folded.get(name.lower())
        if knob is None:
            raise UserError(self._unknown_message(name))
        return knob

    def resolve(self, settings: Mapping[str, object]) -> dict[str, str]:
        """Canonical names and values for ``settings``; raise UserError on an unknown knob, a bad value or
        a knob set twice under two spellings."""
        resolved: dict[str, str] = {}
        for name, raw in settings.items():
            knob = self.get(name)
            if knob.name in resolved:
                raise UserError(f"knob {knob.name} is set twice")
            resolved[knob.name] = knob.parse(raw)
        return resolved

    def with_defaults(self, settings: Mapping[str, str]) -> dict[str, str]:
        return {knob.name: settings.get(knob.name, knob.default) for knob in self} | dict(settings)

    def durability_warnings(self, settings: Mapping[str, str]) -> list[str]:
        return [f"{name}={value} weakens durability" for name, value in settings.items()
                if name in self._knobs and self._knobs[name].weakens_durability(value)]

    def _unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._knobs), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        if len(self._knobs) > 20:  # a server's hundreds of settings help nobody in one line
            return f"unknown {self.engine} knob {name!r}{hint}"
        return f"unknown {self.engine} knob {name!r}{hint} (known: {', '.join(sorted(self._knobs))})"


def parse_assignments(pairs: Iterable[str]) -> dict[str, str]:
    """``["page_size=8192", ...]`` from the command line into a mapping; one-line error otherwise."""
    settings: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UserError(f"bad knob setting {pair!r}: expected NAME=VALUE, e.g. cache_size=-64000 or "
                            "work_mem=64MB")
        earlier = next((k for k in settings if k.lower() == name.strip().lower()), None)
        if earlier is not None and settings[earlier] != value.strip():
            raise UserError(f"knob {name.strip()} is given twice: {earlier}={settings[earlier]} and {pair.strip()}")
        settings[earlier or name.strip()] = value.strip()
    return settings
