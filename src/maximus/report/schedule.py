"""A fixed-rate run against its schedule (issue #45) in the terminal: the rate it was asked for and the rate it kept,
the backlog, the scheduler's own error and the verdict (``analysis.rate.RateFigures``). The rows are text shared with
the HTML report, which escapes them."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from maximus.analysis.rate import LATE_S, RateFigures
from maximus.report.console import sparkline

SCHEDULE_TITLE = "Schedule (fixed rate, measured window)"


def schedule_rows(rate: RateFigures) -> list[tuple[str, str, str]]:
    """(figure, value, meaning) of the schedule, in the order both reports show them; the verdict comes apart."""
    terminals = f"{rate.terminals} terminal{'s' if rate.terminals != 1 else ''}"
    return [
        ("Target", f"{rate.target:,g}/s", f"{rate.arrivals} arrivals over {terminals}"),
        ("Achieved", f"{rate.achieved:,.1f}/s", "transactions completed per second in the window"),
        ("Scheduled", f"{rate.scheduled:,}", "the schedule's transactions due in the window"),
        ("Done", f"{rate.done:,} ({100 * rate.ratio:.1f} %)", "of those, completed (committed or rolled back)"),
        ("Backlog at start", f"{rate.backlog_at_start:,}", "due and not started as the window began"),
        ("Backlog at end", f"{rate.backlog_at_end:,} ({rate.backlog_growth:+,})",
         "due and not started as it ended, unstarted included (growth)"),
        ("Warm-up backlog skipped", f"{rate.warmup_backlog:,}", "the warm-up's still due: dropped, not carried in"),
        ("Unstarted", f"{rate.unstarted:,}", "the window's transactions never started"),
        ("Start error p99", _ms(rate.start_error_p99), "how late the scheduler woke an idle terminal"),
    ]


def _ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1000:,.2f} ms"


def series_lines(rate: RateFigures) -> list[str]:
    """The backlog at each second's end and the late starts in each second, from the time origin, as sparklines."""
    backlog, late = [n for _, n in rate.backlog], [n for _, n in rate.late]
    return [f"Backlog at each second's end: {_spark(backlog)}",
            f"Starts over {LATE_S * 1000:g} ms late, per second: {_spark(late)}"]


def _spark(counts: list[int]) -> str:
    return f"{sparkline(counts)} (max {max(counts):,})" if any(counts) else "none"


def render_schedule(console: Console, rate: RateFigures | None) -> None:
    """The schedule's table, its series and its verdict; nothing for a closed-loop run."""
    if rate is None:
        return
    table = Table(title=SCHEDULE_TITLE, title_justify="left", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(justify="right", no_wrap=True)
    table.add_column()
    for figure, value, meaning in schedule_rows(rate):
        table.add_row(figure, value, meaning)
    console.print(table)
    for line in series_lines(rate):
        console.print(line, highlight=False)
    style = "green" if rate.sustained else "bold red"
    console.print(f"Verdict: [{style}]{escape(rate.verdict)}[/]", highlight=False)
