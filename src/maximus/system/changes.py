"""Changes to the kernel's settings (the machine knobs: sysctl and sysfs files): made only when the user allows them,
as root, journaled before each is made (``maximus.system.journal``), and always put back, the last first.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

from maximus.errors import UserError
from maximus.system.journal import Hold, Scope, Written
from maximus.system.knobs import OsKnob, machine_knob

OPT_IN = "--allow-system-changes (system_changes = true in an experiment file)"


def require(names: list[str], allowed: bool, opt_in: str = OPT_IN) -> None:
    """A one-line UserError unless the user allowed changes to the machine (``opt_in`` says how) and Maximus runs
    as root."""
    if not names:
        return
    listed = ", ".join(names)
    if not allowed:
        raise UserError(f"{listed}: Maximus changes the operating system only when allowed: add {opt_in}")
    if os.geteuid() != 0:
        raise UserError(f"{listed}: changing the operating system needs root: run maximus as root")


@contextmanager
def applied(settings: Mapping[str, str], data_path: Path, allowed: bool, hold: Hold | None = None
            ) -> Iterator[list[str]]:
    """The machine knobs ``settings`` (canonical names and values) in force for the block, put back after it however
    it ends, journaled in ``hold``'s journal (one of its own when None). Yields a warning for each value the kernel
    took otherwise than asked (fewer huge pages)."""
    if not settings:
        yield []
        return
    require(list(settings), allowed)
    with (hold or Hold()).journal() as journal, journal.scope() as scope:
        yield [warning for name, value in settings.items()
               if (warning := _change(machine_knob(name), value, data_path, scope))]


def _change(knob: OsKnob, value: str, data_path: Path, journal: Scope) -> str:
    """Journal, then write, then read back: a warning when the kernel reports another value."""
    target = knob.path(data_path)
    before = knob.read(data_path)  # a knob this kernel does not offer is one line, not a traceback
    offered = knob.choices(data_path)
    if offered is not None and value not in offered:
        raise UserError(f"{knob.name}={value}: this kernel offers {', '.join(offered)}")
    if before == value:
        return ""
    changed = {entry.knob for entry in journal.journal.entries if isinstance(entry, Written)}
    for name in knob.also_changes:  # journaled as they are, so that they are put back after this knob
        if name not in changed:
            side = machine_knob(name)
            now = side.read(data_path)
            journal.record(Written(name, str(side.path(data_path)), now, now))
    journal.record(Written(knob.name, str(target), before, value))
    try:
        target.write_text(value)
    except OSError as error:
        raise UserError(f"the kernel refused {knob.name}={value} ({target}): {error.strerror}") from None
    now = knob.read(data_path)
    return "" if now == value else f"{knob.name}={value} was asked, but the kernel reports {now}"
