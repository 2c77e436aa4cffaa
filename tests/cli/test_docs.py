"""The README documents every command, every option and every knob: this test fails when one is missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from maximus.cli.app import app
from maximus.engines import ENGINES

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _commands(group, prefix: str = "") -> dict:
    """Every leaf command, nested groups included: {"run": cmd, "experiment run": cmd, ...}."""
    found = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[f"{prefix}{name}"] = command
    return found


COMMANDS = _commands(typer.main.get_command(app))


def _section(command: str) -> str:
    match = re.search(rf"^### `maximus {command}[^`]*`\n(.*?)(?=^### |^## )", README, re.S | re.M)
    assert match, f"README has no section '### `maximus {command}`'"
    return match.group(1)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_and_option_is_documented(command: str) -> None:
    section = _section(command)
    for param in COMMANDS[command].params:
        for flag in [*param.opts, *getattr(param, "secondary_opts", [])]:
            if flag.startswith("--"):
                assert f"`{flag}" in section, f"{flag} of `maximus {command}` is not in its README section"


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_knob_is_documented(engine: str) -> None:
    for name in ENGINES[engine].documented_knobs():
        assert f"| `{name}` |" in README, f"knob {name} of {engine} is not in the README"


def test_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", quick, re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make demo", "make test"]
