"""Crash tests on the terminal: one row per crash, recovery and verification cycle, what failed under the table, and
per configuration and mode its durability class with what the cycles allow one to claim."""

from __future__ import annotations

from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from maximus.analysis.durability import (Durability, by_configuration, configuration_of, configuration_text,
                                         failed_checks)
from maximus.records import CrashTestRecord, Verdict

VERDICT_STYLE = {Verdict.DURABLE: "green", Verdict.LOST: "bold red", Verdict.INCONSISTENT: "bold red"}
NOT_TESTED = "not tested"


def durability_text(found: Durability | None) -> str:
    """The durability class as rich markup, coloured by its worst verdict; "not tested" without a crash test."""
    if found is None:
        return f"[dim]{NOT_TESTED}[/]"
    return f"[{VERDICT_STYLE[found.worst]}]{escape(found.durability_class)}[/]"


def _seconds(value: float | None) -> str:
    return "did not recover" if value is None else f"{value:.2f}"


def _knobs(record: CrashTestRecord) -> str:
    """One knob a line, in the order the summary names the configuration (``configuration_of``)."""
    return "\n".join(f"{k}={v}" for k, v in configuration_of(record)[1]) or "(defaults)"


def render_crash_tests(console: Console, records: Sequence[CrashTestRecord]) -> None:
    """The cycles' table, the failed checks and notes of each under it, then the summary per configuration and
    mode."""
    if not records:
        console.print("No crash test stored.")
        return
    windows = _windows(records)
    console.print(_table(records, windows))
    for window, mark in windows.items():
        console.print(f"  {escape(mark)}: {escape(window)}")
    for record in records:
        for check in failed_checks(record):
            detail = f": {check.detail}" if check.detail else ""
            console.print(f"  test {record.id}: [red]{escape(check.clause)} {escape(check.description)}[/]"
                          f"{escape(detail)}")
        if record.test.verdict is not Verdict.DURABLE:
            for note in record.test.notes:
                console.print(f"  test {record.id}: {escape(note)}")
    render_durability_summary(console, records)


def _windows(records: Sequence[CrashTestRecord]) -> dict[str, str]:
    """Each documented window once, marked [1], [2], ...: a window is a sentence, repeated by every cycle of a
    configuration, and would take the table's width."""
    found = dict.fromkeys(r.test.window for r in records if r.test.window)
    return {window: f"[{number}]" for number, window in enumerate(found, 1)}


def _table(records: Sequence[CrashTestRecord], windows: dict[str, str]) -> Table:
    in_plan = any(r.test.experiment_id is not None for r in records)
    table = Table(title="Crash tests", title_justify="left")
    for column in ("Test", *(("Experiment",) if in_plan else ()), "Engine", "Knobs", "Mode", "Seed", "Verdict"):
        table.add_column(column, justify="right" if column in ("Test", "Seed") else "left",
                         overflow="fold", no_wrap=column != "Knobs")  # a long knob folds, not a number
    for column in ("Acked", "Lost", "Recovery s", "Crashed s"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("Window", justify="center")
    for record in records:
        test = record.test
        place = (f"{test.experiment_id} {test.plan_key or ''}".strip() if test.experiment_id is not None else "-",) \
            if in_plan else ()
        table.add_row(str(record.id), *place, escape(test.engine), escape(_knobs(record)), test.mode.value,
                      str(test.seed), f"[{VERDICT_STYLE[test.verdict]}]{test.verdict.value}[/]",
                      f"{test.findings.acknowledged:,}", f"{len(test.findings.lost):,}", _seconds(test.recovery_s),
                      f"{test.crashed_at_s:.1f}", escape(windows.get(test.window, "-")))
    return table


def render_durability_summary(console: Console, records: Sequence[CrashTestRecord]) -> None:
    """Per configuration and mode: its class, recovery, documented window and, with no loss, the upper bound."""
    console.print("[bold]Durability:[/]")
    for configuration, found in by_configuration(records):
        for mode in found.modes:
            console.print(Padding(f"{escape(configuration_text(configuration))} · {mode.mode.value}: "
                                  f"[{VERDICT_STYLE[mode.worst]}]{escape(mode.phrase())}[/]", (0, 0, 0, 2)))
            console.print(Padding(escape("; ".join(mode.facts())), (0, 0, 0, 4)))
