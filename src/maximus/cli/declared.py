"""Options that others declare (the engines, the workloads): offered by a command in place of one parameter of
it, which receives them gathered, so that typer reads them as any option written in the command."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Sequence

Gather = Callable[[dict[str, Any], Mapping[str, Any]], Any]  # (the declared options' values, the command's own)


def offering(command: Callable[..., Any], placeholder: str, parameters: Sequence[inspect.Parameter],
             gather: Gather) -> Callable[..., Any]:
    """``command`` with ``parameters`` in its signature where its parameter ``placeholder`` was; that one
    receives what ``gather`` makes of the values given to them."""
    names = [parameter.name for parameter in parameters]

    def with_declared(**given: Any) -> Any:
        declared = {name: given.pop(name) for name in names}
        return command(**given, **{placeholder: gather(declared, given)})

    with_declared.__signature__ = _replaced(command, placeholder, parameters)  # type: ignore[attr-defined]
    with_declared.__name__, with_declared.__doc__ = command.__name__, command.__doc__
    return with_declared


def _replaced(command: Callable[..., Any], placeholder: str,
              parameters: Sequence[inspect.Parameter]) -> inspect.Signature:
    signature = inspect.signature(command, eval_str=True)
    replaced: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        replaced += parameters if parameter.name == placeholder else [parameter]
    return signature.replace(parameters=replaced)
