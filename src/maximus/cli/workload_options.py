"""The workloads' own settings on the command line, as each workload declares them (``Workload.options``):
TPC-C's ``--warehouses``, ``--keying/--no-keying`` and ``--mix``. ``run`` offers every one of every registered
workload; ``load`` and ``check`` those that choose which database is built."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Mapping, Optional

import typer

from maximus import api
from maximus.cli.declared import offering
from maximus.errors import UserError


@dataclass(frozen=True)
class Offered:
    """A workload's setting as one option of a command, with the default the workload gives it. Workloads of one
    family (io-random and io-scan: one table) may declare the same setting alike: it is one option of each."""

    workloads: tuple[str, ...]
    setting: api.CommandLineSetting
    default: Any

    @property
    def parameter(self) -> str:
        """The command's parameter behind the option, clear of the command's own (``--check``)."""
        return "setting_" + self.setting.flag.lstrip("-").replace("-", "_")


def with_workload_options(chooses_database: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The command with the registered workloads' command-line settings (those that choose the database alone
    when ``chooses_database``) in place of its parameter ``settings``, which it receives as the workload named
    by its parameter ``workload`` takes them: ``{key: value}`` of the options given."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        options = offered(chooses_database)
        return offering(command, "settings", [_parameter(option) for option in options],
                        lambda given, own: settings_given(own["workload"], options, given))
    return decorate


def offered(chooses_database: bool = False) -> list[Offered]:
    """Every registered workload's command-line settings. A flag declared twice is a bug in a workload, unless both
    declare the same setting alike, with the same default: then it is one option, shared."""
    found: dict[str, Offered] = {}
    for workload, settings in api.workload_options().items():
        defaults = api.default_settings(workload)
        for setting in settings:
            if not (setting.chooses_database or not chooses_database):
                continue
            option = Offered((workload,), setting, defaults[setting.key])
            if setting.flag in found:
                option = _shared(found[setting.flag], option)
            found[setting.flag] = option
    return list(found.values())


def _shared(first: Offered, again: Offered) -> Offered:
    if (first.setting, first.default) != (again.setting, again.default):
        raise ValueError(f"{again.setting.flag} is declared by the {' and the '.join(first.workloads)} and the "
                         f"{' and the '.join(again.workloads)} workloads: a flag names one setting of one workload, "
                         "or the same setting, declared alike, of several")
    return Offered(first.workloads + again.workloads, first.setting, first.default)


def settings_given(workload: str, options: list[Offered], given: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of ``workload`` given as options; the option of another registered workload is refused as
    none of its settings (an unknown workload is refused when the options are validated)."""
    settings = {}
    for option in options:
        value = given[option.parameter]
        if value is None:
            continue
        if workload in option.workloads:
            settings[option.setting.key] = value
        elif workload in api.workload_options():
            raise UserError(f"{option.setting.flag}: not a setting of the {workload} workload")
    return settings


def as_option(error: api.SettingError, workload: str) -> UserError:
    """A workload's refusal of a setting, as the option that gave it reports it (``--warehouses must be at
    least 1``)."""
    flags = [setting.flag for setting in api.workload_options().get(workload, ()) if setting.key == error.key]
    return error.for_option(flags[0] if flags else f"--{error.key}")


def _parameter(option: Offered) -> inspect.Parameter:
    setting = option.setting
    on_off = setting.type is bool
    flags = [f"{setting.flag}/--no-{setting.flag[2:]}" if on_off else setting.flag]
    flags += [setting.short] if setting.short else []
    shown = ("on" if option.default else "off") if on_off else option.default
    # \\[: rich would read "[default: 1]" as markup; typer's own default is None, "not given"
    given = typer.Option(*flags, help=f"{setting.help} \\[default: {shown}].")
    annotation = Annotated[Optional[setting.type], given]  # type: ignore[name-defined]
    return inspect.Parameter(option.parameter, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                             annotation=annotation)
