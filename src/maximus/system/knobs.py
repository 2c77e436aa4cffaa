"""Operating-system knobs: the kernel's settings a step may change like a database knob, one variable at a time.

Each is read and written where the kernel keeps it: a sysctl under ``/proc/sys``, a sysfs file whose current
choice is the bracketed word (transparent huge pages, the I/O scheduler), or the request queue of the disk that
holds the data (``/sys/block/DISK/queue``). Names are the kernel's own (``vm.dirty_ratio``), or the sysfs
directory's and the file's (``transparent_hugepage.enabled``, ``block.scheduler``), so they never meet an
engine's knob: generic code tells them apart by the catalogue, never by the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from maximus import environment
from maximus.errors import EngineError, UserError
from maximus.knobs import Choice, Integer, KnobCatalogue
from maximus.knobs.registry import ValueType
from maximus.system.processes import PROCESS_KNOBS
from maximus.system import storage
from maximus.system.storage import STORAGE_KNOBS

PROC_SYS = Path("/proc/sys")
SYS_KERNEL_MM = Path("/sys/kernel/mm")
_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class Sysctl:
    """``vm.dirty_ratio`` is ``/proc/sys/vm/dirty_ratio``."""

    def path(self, name: str, data_path: Path) -> Path:
        return PROC_SYS / name.replace(".", "/")

    def read(self, path: Path) -> str:
        return path.read_text().strip()


@dataclass(frozen=True)
class Bracketed:
    """A sysfs file that lists the choices and brackets the current one: ``always [madvise] never``."""

    file: Path

    def path(self, name: str, data_path: Path) -> Path:
        return self.file

    def read(self, path: Path) -> str:
        return environment.bracketed(path.read_text())


@dataclass(frozen=True)
class DiskQueue:
    """An attribute of the request queue of the disk that holds ``data_path`` (a partition's is its disk's)."""

    attribute: str
    bracketed: bool = False

    def path(self, name: str, data_path: Path) -> Path:
        queue = environment.queue_dir(data_path)
        if queue is None:
            raise UserError(f"{name}: the disk holding {data_path} has no request queue of its own to tune")
        return queue / self.attribute

    def read(self, path: Path) -> str:
        text = path.read_text()
        return environment.bracketed(text) if self.bracketed else text.strip()


Location = Sysctl | Bracketed | DiskQueue


@dataclass(frozen=True)
class OsKnob:
    """One kernel setting: its type and unit, what it risks, and a line of advice."""

    name: str
    type: ValueType
    location: Location
    description: str
    advice: str
    unit: str = ""
    risk: str = ""  # what a bad value costs: durability (data lost in a crash) or the machine's health
    weakens_durability_when: frozenset[str] = frozenset()
    also_changes: tuple[str, ...] = ()  # knobs the kernel resets when this one changes, to be put back too

    def parse(self, raw: object) -> str:
        try:
            return self.type.parse(str(raw))
        except ValueError as error:
            raise UserError(f"bad value {raw!r} for knob {self.name}: {error}") from None

    def path(self, data_path: Path) -> Path:
        return self.location.path(self.name, data_path)

    def read(self, data_path: Path) -> str:
        """The value in force now; EngineError when the kernel does not offer this knob."""
        path = self.path(data_path)
        try:
            return self.location.read(path)
        except OSError as error:
            raise EngineError(f"cannot read {self.name} ({path}): {error.strerror}") from None

    def choices(self, data_path: Path) -> tuple[str, ...] | None:
        """The choices this kernel offers, where the file lists them (the disk's schedulers)."""
        if isinstance(self.location, (Bracketed, DiskQueue)) and getattr(self.location, "bracketed", True):
            text = self.path(data_path).read_text()
            return tuple(word.strip("[]") for word in text.split())
        return None

    def weakens_durability(self, value: str) -> bool:
        return value in self.weakens_durability_when


_DIRTY = ("Lower values start writeback sooner and keep a checkpoint's burst of dirty pages small; the classic "
          "articles tuned the kernel's flushing daemon (bdflush) this way for a shorter load and more throughput.")

OS_KNOBS: tuple[OsKnob, ...] = (
    OsKnob("vm.dirty_ratio", Integer(0, 100), Sysctl(), "Share of reclaimable memory that may be dirty before a "
           "writing process must flush pages itself.", _DIRTY, unit="%",
           risk="higher values lose more unflushed file data in a crash of the machine (not of the database, "
                "whose commits are synced)"),
    OsKnob("vm.dirty_background_ratio", Integer(0, 100), Sysctl(), "Share of reclaimable memory that may be dirty "
           "before the kernel's flusher threads start writing in the background.", _DIRTY, unit="%"),
    OsKnob("vm.dirty_expire_centisecs", Integer(0, _INT_MAX), Sysctl(), "Age after which a dirty page is written "
           "back by the flusher threads.", _DIRTY, unit="cs"),
    OsKnob("vm.dirty_writeback_centisecs", Integer(0, _INT_MAX), Sysctl(), "How often the flusher threads wake up "
           "(0 disables the periodic writeback).", _DIRTY, unit="cs"),
    OsKnob("vm.swappiness", Integer(0, 200), Sysctl(), "How readily the kernel swaps anonymous memory (a buffer "
           "cache) out rather than dropping file pages.", "Lower it (1-10) so a large buffer cache is not swapped "
           "out under file-system pressure."),
    OsKnob("vm.nr_hugepages", Integer(0, _INT_MAX), Sysctl(), "Persistent 2 MB huge pages reserved for shared "
           "memory (PostgreSQL's huge_pages=on uses them).", "Reserve enough for the buffer cache and set the "
           "engine's huge-page knob: the classic articles measured 8 % more throughput. The kernel may reserve "
           "fewer than asked when memory is fragmented: the run then says so.", unit="pages",
           risk="reserved pages are taken from the rest of the machine"),
    OsKnob("transparent_hugepage.enabled", Choice(("always", "madvise", "never")),
           Bracketed(SYS_KERNEL_MM / "transparent_hugepage/enabled"), "Transparent huge pages: for every "
           "anonymous mapping, only where asked (madvise), or never.", "Database vendors advise never (or "
           "madvise): compaction stalls and memory bloat outweigh the fewer TLB misses for a buffer cache."),
    OsKnob("transparent_hugepage.defrag", Choice(("always", "defer", "defer+madvise", "madvise", "never")),
           Bracketed(SYS_KERNEL_MM / "transparent_hugepage/defrag"), "Whether a fault waits for memory to be "
           "compacted into a huge page.", "madvise or never keep compaction out of the transactions' way."),
    OsKnob("block.scheduler", Choice(("none", "mq-deadline", "kyber", "bfq")), DiskQueue("scheduler", True),
           "The I/O scheduler of the disk that holds the work directory.", "none or mq-deadline suit fast "
           "virtual and solid-state disks; bfq favours interactivity; the classic articles tuned the elevator.",
           also_changes=("block.nr_requests",)),  # a new scheduler brings its own queue depth
    OsKnob("block.read_ahead_kb", Integer(0, 65536), DiskQueue("read_ahead_kb"), "How far the kernel reads ahead "
           "of a sequential read on that disk.", "OLTP reads are random: a small read-ahead saves I/O a load "
           "or a scan would have used.", unit="KiB"),
    OsKnob("block.nr_requests", Integer(4, 65536), DiskQueue("nr_requests"), "How many requests that disk's "
           "queue holds before a writer waits.", "Deeper queues let the scheduler merge and sort more writes "
           "at checkpoints; the kernel may cap it by the scheduler's and the driver's limits."),
)


# looked up, resolved and suggested ("did you mean") as an engine's knobs are: they parse as an engine's do
OS = KnobCatalogue("operating-system", (*OS_KNOBS, *PROCESS_KNOBS, *STORAGE_KNOBS))  # type: ignore[arg-type]


_PREFIXES = tuple({knob.name.split(".", 1)[0] + "." for knob in OS})  # vm., block., server., storage., ...


def is_os_knob(name: str) -> bool:
    """An operating-system knob's name: one of the catalogue's, or a name under one of its prefixes (so that a
    mistyped ``vm.dirty_ration`` gets the OS catalogue's "did you mean", not an engine's)."""
    return name in OS or name.lower().startswith(_PREFIXES)


def split(knobs: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The engine's knobs and the operating system's, from one mapping of both."""
    engine = {name: value for name, value in knobs.items() if not is_os_knob(name)}
    system = {name: value for name, value in knobs.items() if is_os_knob(name)}
    return engine, system


def machine(settings: Mapping[str, str]) -> dict[str, str]:
    """The knobs among ``settings`` that change the machine (journaled and put back), not a process."""
    return {name: value for name, value in settings.items() if isinstance(OS.get(name), OsKnob)}


def machine_knob(name: str) -> OsKnob:
    """The machine knob (a sysctl or sysfs file, not a process's or a storage layout's) called ``name``."""
    knob = OS.get(name)
    if not isinstance(knob, OsKnob):
        raise TypeError(f"{name} is not a knob of the machine")
    return knob


def current_values(data_path: Path) -> dict[str, str]:
    """Every machine knob's value now, for the run's record: '' for one this kernel does not offer."""
    values = {}
    for knob in OS_KNOBS:
        try:
            values[knob.name] = knob.read(data_path)
        except (EngineError, UserError):
            values[knob.name] = ""
    return values


def durability_warnings(settings: Mapping[str, str]) -> list[str]:
    """``name=value weakens durability`` for each OS knob whose value does (a layout's on the file system it names)."""
    others = {name: value for name, value in settings.items() if name not in storage.STORAGE}
    return OS.durability_warnings(others) + storage.durability_warnings(settings)
