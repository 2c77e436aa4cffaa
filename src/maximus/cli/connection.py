"""The engines' connection options on the command line, as each engine declares them
(``Engine.connection_options``): ``--dsn``, ``--bin-dir``, ``--allow-changes``, ``--allow-restart``."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Callable, Iterable, Mapping, Optional

import typer

from maximus.engines import ConnectionOption, connection_options

_TYPES = {"text": Optional[str], "path": Optional[Path], "flag": bool}


def with_connection_options(*kinds: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The command with the registered engines' connection options of ``kinds`` in place of its parameter
    ``connection``, which it receives as ``Engine.connection`` takes them: the options given, a flag as
    "yes"."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        options = [option for option in connection_options() if option.kind in kinds]

        def with_connection(**given: Any) -> Any:
            connection = connection_of(options, {option.name: given.pop(option.name) for option in options})
            return command(**given, connection=connection)

        with_connection.__signature__ = _signature(command, options)  # type: ignore[attr-defined]
        with_connection.__name__, with_connection.__doc__ = command.__name__, command.__doc__
        return with_connection
    return decorate


def connection_of(options: Iterable[ConnectionOption], given: Mapping[str, Any]) -> dict[str, str]:
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


def _signature(command: Callable[..., Any], options: list[ConnectionOption]) -> inspect.Signature:
    signature = inspect.signature(command, eval_str=True)
    parameters = []
    for parameter in signature.parameters.values():
        parameters += [_parameter(option) for option in options] if parameter.name == "connection" else [parameter]
    return signature.replace(parameters=parameters)


def _parameter(option: ConnectionOption) -> inspect.Parameter:
    kind = _TYPES[option.kind]  # a type chosen at run time, which mypy cannot follow into Annotated
    annotation = Annotated[kind, typer.Option(option.flag, help=option.help)]  # type: ignore[valid-type]
    default = False if option.kind == "flag" else None
    return inspect.Parameter(option.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                             annotation=annotation)
