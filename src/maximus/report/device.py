"""The device's limit of an experiment in the terminal: per cell (a step at a load level) the database's rate
beside fio's, over the repeats, their ratio and what bounded the runs (``analysis.device.DeviceCell``). The rows are
text shared with the HTML report, which escapes them."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from maximus.analysis.bundle import ExperimentData
from maximus.analysis.device import DeviceCell
from maximus.report.format import estimate_text, fraction_text, rate_digits
from maximus.report.tables import level_heading

DEVICE_COLUMNS = ("Step", "Clients", "Database ± 95 % CI", "fio ± 95 % CI", "Unit", "Ratio (95 % CI)", "Verdict")
_VERDICT_STYLE = {"device-bound": "bold green", "cache-bound": "yellow", "CPU-bound": "cyan"}


def device_columns(data: ExperimentData) -> tuple[str, ...]:
    """``DEVICE_COLUMNS`` as the experiment's step tables head their levels (a rate sweep's name their rates)."""
    return (DEVICE_COLUMNS[0], level_heading(data.report.summary), *DEVICE_COLUMNS[2:])


def device_rows(data: ExperimentData) -> list[tuple[str, ...]]:
    """A row per cell held against fio, in the order of ``device_columns``; none when no run was."""
    names = data.report.summary.step_names
    return [_row(names[cell.step], cell) for cell in data.device.values()]


def _row(step_name: str, cell: DeviceCell) -> tuple[str, ...]:
    digits = rate_digits(cell.unit)
    return (f"{cell.step}: {step_name}", cell.level.label, estimate_text(cell.database, digits),
            estimate_text(cell.device, digits), cell.unit, fraction_text(cell.ratio), cell.verdict)


def device_table(data: ExperimentData) -> Table | None:
    """The table "Against the device" (``render_experiment`` prints it after the steps' tables); None when no run of
    the experiment was held against fio."""
    rows = device_rows(data)
    if not rows:
        return None
    table = Table(title="Against the device (fio's matching job before every run; mean over repeats)",
                  title_justify="left")
    for index, column in enumerate(device_columns(data)):
        # the verdict wraps (a line per verdict when the runs disagree), so that every other column keeps its width
        table.add_column(column, justify="left" if index in (0, 4, 6) else "right", no_wrap=index != 6)
    for row in rows:
        table.add_row(*(escape(text) for text in row[:-1]), _styled(row[-1]))
    return table


def _styled(verdict: str) -> str:
    style = _VERDICT_STYLE.get(verdict)
    return f"[{style}]{escape(verdict)}[/]" if style else escape(verdict).replace(", ", ",\n")
