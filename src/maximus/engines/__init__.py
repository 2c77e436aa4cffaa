"""Engines, registered in one table: adding one touches nothing else."""

from __future__ import annotations

import difflib

from maximus.engines.base import Capabilities, Dialect, Engine, Session
from maximus.engines.postgres import PostgresEngine
from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import UserError

ENGINES: dict[str, type[Engine]] = {SQLiteEngine.name: SQLiteEngine, PostgresEngine.name: PostgresEngine}


def engine_class(name: str) -> type[Engine]:
    try:
        return ENGINES[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(ENGINES), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UserError(f"unknown engine {name!r}{hint} (available: {', '.join(ENGINES)})") from None


__all__ = ["Capabilities", "Dialect", "ENGINES", "Engine", "Session", "engine_class"]
