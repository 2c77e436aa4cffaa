"""The engines' connection options on the command line, as each engine declares them
(``Engine.connection_options``): ``--dsn``, ``--bin-dir``, ``--allow-changes``, ``--allow-restart``."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Mapping, Optional

import typer

from maximus import api
from maximus.cli.declared import offering

_TYPES = {"text": Optional[str], "path": Optional[Path], "flag": bool}


def with_connection_options(*kinds: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The command with the registered engines' connection options of ``kinds`` in place of its parameter
    ``connection``, which it receives as ``Engine.connection`` takes them: the options given, a flag as
    "yes"."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        options = [option for option in api.connection_options() if option.kind in kinds]
        return offering(command, "connection", [_parameter(option) for option in options],
                        lambda given, _: connection_of(options, given))
    return decorate


def connection_of(options: Iterable[api.ConnectionOption], given: Mapping[str, Any]) -> dict[str, str]:
    """The options given, as text; an option that implies another is named just before it, so that a refusal
    names the one the user gave (``--allow-restart is not an option of sqlite``)."""
    options = list(options)
    connection = {option.name: "yes" if option.kind == "flag" else str(given[option.name])
                  for option in options if given.get(option.name)}
    for option in options:
        if option.implies and option.name in connection:
            connection.pop(option.implies, None)
            connection[option.implies] = "yes"
    return connection


def _parameter(option: api.ConnectionOption) -> inspect.Parameter:
    kind = _TYPES[option.kind]  # a type chosen at run time, which mypy cannot follow into Annotated
    annotation = Annotated[kind, typer.Option(option.flag, help=option.help)]  # type: ignore[valid-type]
    default = False if option.kind == "flag" else None
    return inspect.Parameter(option.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                             annotation=annotation)
