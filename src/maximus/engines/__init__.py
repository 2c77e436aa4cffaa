"""Engines, registered in one table: adding one touches nothing else."""

from __future__ import annotations

import dataclasses
import difflib
from typing import Mapping

from maximus.engines.base import Capabilities, ConnectionOption, Dialect, Driver, Engine, Session
from maximus.engines.mariadb import MariaDBEngine
from maximus.engines.postgres import PostgresEngine
from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import UserError

ENGINES: dict[str, type[Engine]] = {SQLiteEngine.name: SQLiteEngine, PostgresEngine.name: PostgresEngine,
                                    MariaDBEngine.name: MariaDBEngine}


def engine_class(name: str) -> type[Engine]:
    try:
        return ENGINES[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(ENGINES), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise UserError(f"unknown engine {name!r}{hint} (available: {', '.join(ENGINES)})") from None


def runnable_engine(name: str) -> type[Engine]:
    """The engine to run, its driver installed (``Engine.require_driver``): what reading stored results needs is
    ``engine_class``."""
    engine = engine_class(name)
    engine.require_driver()
    return engine


def check_connection(engine: type[Engine], connection: Mapping[str, str | None]) -> None:
    """Refuse an option the engine does not understand: ignored, ``--dsn`` would quietly run the default
    engine on its own files instead of the server the user named."""
    for option, value in connection.items():
        if value and option not in _names(engine):
            owners = [n for n, cls in ENGINES.items() if option in _names(cls)]
            flag = "--" + option.replace("_", "-")
            raise UserError(f"{flag} is not an option of {engine.name}: add -e {owners[0]}" if owners
                            else f"{flag} is not an option of {engine.name}")


def _names(engine: type[Engine]) -> set[str]:
    return {option.name for option in engine.connection_options}


def connection_options() -> list[ConnectionOption]:
    """Every registered engine's connection options, each name once: one that several engines declare (``--dsn``)
    is the first one's, with every engine's help in the registry's order."""
    declared: dict[str, list[ConnectionOption]] = {}
    for engine in ENGINES.values():
        for option in engine.connection_options:
            declared.setdefault(option.name, []).append(option)
    return [dataclasses.replace(options[0], help=" ".join(option.help for option in options))
            for options in declared.values()]


__all__ = ["Capabilities", "ConnectionOption", "Dialect", "Driver", "ENGINES", "Engine", "Session",
           "check_connection", "connection_options", "engine_class", "runnable_engine"]
