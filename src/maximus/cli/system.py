"""``maximus system``: the operating-system knobs as they are now, and putting back what a Maximus left changed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from maximus import api

system_app = typer.Typer(no_args_is_help=True, help="The operating system's knobs: show them, put them back.")

Workdir = Annotated[Optional[Path], typer.Option("--workdir", help="Where the databases are (the disk whose queue "
                                                 "the block.* knobs tune) [default: $MAXIMUS_WORKDIR or "
                                                 "./maximus-work].")]


@system_app.command("show")
def show(workdir: Workdir = None) -> None:
    """Print every operating-system knob with its value now, its risk and a line of advice."""
    out = Console(width=None if sys.stdout.isatty() else 120)
    table = Table("Knob", "Now", "Values", "Advice", show_lines=True)
    for knob in api.os_knobs(workdir):
        unit = f" {knob.unit}" if knob.unit else ""
        risk = f" [yellow]Risk: {knob.risk}.[/]" if knob.risk else ""
        now = "(set per run)" if knob.now is None else (knob.now or "(not offered)") + unit
        table.add_row(f"[bold]{knob.name}[/]\n{knob.description}", now, knob.values, knob.advice + risk)
    out.print(table)
    journal = api.system_journal()
    if journal:
        out.print(f"[yellow]note:[/] {journal} lists changes a Maximus made: `maximus system restore` puts "
                  "them back once it has ended")


@system_app.command("restore")
def restore() -> None:
    """Put back what a Maximus that did not finish left changed (as root): OS knobs, and its storage layouts'
    servers, mounts, devices and files."""
    changes = api.restore_system()
    Console().print(f"Put back {len(changes)} change(s) to the machine" if changes
                    else "Nothing left to put back: the machine is as Maximus found it")
