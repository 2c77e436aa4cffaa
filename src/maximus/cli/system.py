"""``maximus system``: the operating-system knobs as they are now, and putting back what a Maximus left changed."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from maximus import api
from maximus.errors import UserError
from maximus.system import OS, current_values, journal_path

system_app = typer.Typer(no_args_is_help=True, help="The operating system's knobs: show them, put them back.")

Workdir = Annotated[Optional[Path], typer.Option("--workdir", help="Where the databases are (the disk whose queue "
                                                 "the block.* knobs tune) [default: $MAXIMUS_WORKDIR or "
                                                 "./maximus-work].")]


@system_app.command("show")
def show(workdir: Workdir = None) -> None:
    """Print every operating-system knob with its value now, its risk and a line of advice."""
    out = Console(width=None if sys.stdout.isatty() else 120)
    values = current_values(workdir or api.default_workdir())
    table = Table("Knob", "Now", "Values", "Advice", show_lines=True)
    for knob in OS:
        unit = f" {knob.unit}" if getattr(knob, "unit", "") else ""
        risk = f" [yellow]Risk: {knob.risk}.[/]" if getattr(knob, "risk", "") else ""
        now = (values[knob.name] or "(not offered)") + unit if knob.name in values else "(set per run)"
        table.add_row(f"[bold]{knob.name}[/]\n{knob.description}", now, knob.type.describe(), knob.advice + risk)
    out.print(table)
    if journal_path().exists():
        out.print(f"[yellow]note:[/] {journal_path()} lists changes a Maximus made: `maximus system restore` puts "
                  "them back once it has ended")


@system_app.command("restore")
def restore() -> None:
    """Put back what a Maximus that did not finish left changed (as root): OS knobs, and its storage layouts'
    servers, mounts, devices and files."""
    if journal_path().exists() and os.geteuid() != 0:
        raise UserError("putting back the operating-system knobs needs root: run maximus system restore as root")
    changes = api.recover_system(strict=True)
    if journal_path().exists():
        raise UserError("the Maximus that changed the machine still runs: it puts everything back itself")
    Console().print(f"Put back {len(changes)} change(s) to the machine" if changes
                    else "Nothing left to put back: the machine is as Maximus found it")
