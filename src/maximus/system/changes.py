"""Changes to the machine: made only when the user allows them, as root, journaled before each is made, and
always put back.

The journal is a file that lists, before each change, the knob, the file it writes and the value it
replaces. The process that makes changes holds the journal's lock (``maximus.locks``) until it has put them
back, so a journal whose lock nobody holds was left by a Maximus that did not finish (SIGKILL, a crash): the
next ``maximus`` command puts its values back before it does anything else, and ``maximus system restore``
does it by hand. A journal from before the machine restarted is dropped: the kernel booted with its own values.
"""

from __future__ import annotations

import json
import logging
import os
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Mapping

from maximus import locks
from maximus.errors import EngineError, UserError
from maximus.system.knobs import OS, OsKnob

_log = logging.getLogger(__name__)  # what the user should know was put back (the CLI prints it)
JOURNAL_VARIABLE = "MAXIMUS_SYSTEM_JOURNAL"
DEFAULT_JOURNAL = Path("/var/lib/maximus/system-journal.json")
OPT_IN = "--allow-system-changes (system_changes = true in an experiment file)"


@dataclass(frozen=True)
class Change:
    knob: str
    path: str  # the file written
    before: str  # the value it replaced, put back at the end
    asked: str


def journal_path() -> Path:
    return Path(os.environ.get(JOURNAL_VARIABLE) or DEFAULT_JOURNAL)


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
def applied(settings: Mapping[str, str], data_path: Path, allowed: bool) -> Iterator[list[str]]:
    """The OS knobs ``settings`` (canonical names and values) in force for the block, put back after it however
    it ends. Yields a warning for each value the kernel took otherwise than asked (fewer huge pages)."""
    if not settings:
        yield []
        return
    require(list(settings), allowed)
    path = journal_path()
    with locks.held(path.with_name(path.name + ".lock"), "the operating system's knobs",
                    "wait for it to finish; its changes are put back when it ends"):
        _put_back_leftovers(path)
        changes: list[Change] = []
        try:
            yield [warning for name, value in settings.items()
                   if (warning := _change(OS.get(name), value, data_path, changes, path))]
        except BaseException:
            try:
                _restore(changes, path)
            except EngineError as error:  # the error on its way is the cause; this one is a note
                _log.warning("%s", error)
            raise
        _restore(changes, path)


def _change(knob: OsKnob, value: str, data_path: Path, changes: list[Change], journal: Path) -> str:
    """Journal, then write, then read back: a warning when the kernel reports another value."""
    target = knob.path(data_path)
    before = knob.read(data_path)  # a knob this kernel does not offer is one line, not a traceback
    offered = knob.choices(data_path)
    if offered is not None and value not in offered:
        raise UserError(f"{knob.name}={value}: this kernel offers {', '.join(offered)}")
    if before == value:
        return ""
    for name in knob.also_changes:  # journaled as they are, so that they are put back after this knob
        if name not in {change.knob for change in changes}:
            side = OS.get(name)
            now = side.read(data_path)
            changes.append(Change(name, str(side.path(data_path)), now, now))
    changes.append(Change(knob.name, str(target), before, value))
    _write_journal(journal, changes)
    try:
        target.write_text(value)
    except OSError as error:
        raise UserError(f"the kernel refused {knob.name}={value} ({target}): {error.strerror}") from None
    now = knob.read(data_path)
    return "" if now == value else f"{knob.name}={value} was asked, but the kernel reports {now}"


def _restore(changes: list[Change], journal: Path) -> None:
    """Every change put back, the last first; the journal goes only once all are back."""
    failed = []
    for change in reversed(changes):
        try:
            Path(change.path).write_text(change.before)
        except OSError as error:
            failed.append(f"{change.knob}={change.before} ({error.strerror})")
    if failed:
        raise EngineError(f"could not put back {', '.join(failed)}: `maximus system restore` tries again")
    journal.unlink(missing_ok=True)


def _write_journal(journal: Path, changes: list[Change]) -> None:
    """Atomically and durably: the journal must be on disk before the change it lists is made."""
    journal.parent.mkdir(parents=True, exist_ok=True)
    partial = journal.with_name(journal.name + ".partial")
    with open(partial, "w") as file:
        json.dump({"boot_id": _boot_id(), "changes": [asdict(change) for change in changes]}, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(partial, journal)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _put_back_leftovers(journal: Path) -> list[Change]:
    """What a Maximus that did not finish left changed, put back (the caller holds the lock)."""
    try:
        recorded = json.loads(journal.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as error:
        raise EngineError(f"the journal of operating-system changes {journal} cannot be read ({error}): check the "
                          "knobs `maximus system show` lists, then remove it") from None
    changes = [Change(**change) for change in recorded.get("changes", [])]
    if recorded.get("boot_id") != _boot_id():
        _log.info("the machine restarted since a Maximus changed %s: the kernel booted with its own values",
                  ", ".join(change.knob for change in changes) or "nothing")
        journal.unlink(missing_ok=True)
        return []
    _restore(changes, journal)
    for change in changes:
        _log.info("put back %s=%s, which a Maximus that did not finish had set to %s", change.knob, change.before,
                  change.asked)
    return changes


def recover() -> list[Change]:
    """Before a command does anything else: put back what a Maximus that did not finish left changed. Nothing
    while the Maximus that made the changes still runs, or when there is nothing to put back; a user who is not
    root is told to run ``maximus system restore`` as root."""
    path = journal_path()
    if not path.exists():
        return []
    if os.geteuid() != 0:
        _log.info("a Maximus that did not finish left operating-system knobs changed (%s): run `maximus system "
                  "restore` as root", path)
        return []
    try:
        with locks.held(path.with_name(path.name + ".lock"), "the operating system's knobs", ""):
            return _put_back_leftovers(path)
    except locks.Busy:
        return []  # its owner still runs, and puts them back itself
