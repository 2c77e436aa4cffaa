"""The journal of what Maximus changed on the machine: an undo log, written to disk before each change is made.

Every change is an entry that knows how to undo itself: a kernel setting written (its value before), a file or
directory created, a loop or zram device attached, a file system mounted, a server started on it, a cgroup
made. Entries are undone last first, so a mount goes before its device and the device before its backing file.

One process at a time holds the journal, under its lock (``maximus.locks``), from its first change until it has
undone its last; within that process the users that nest share one ``Hold`` of it, passed to them (an experiment
keeps a layout mounted while each run changes sysctls). A journal whose lock nobody holds was left by a Maximus
that did not finish (SIGKILL, a crash): the next ``maximus`` command undoes it before anything else, and
``maximus system restore`` does it by hand.
After a restart of the machine only what survives one is undone (files and directories on disk): the kernel
booted with its own settings, and no mount or device of the old boot is left.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable, ClassVar, Iterator

from maximus import environment, limits, locks
from maximus.errors import EngineError, MaximusError
from maximus.pids import start_time

_log = logging.getLogger(__name__)  # what the user should know was put back (the CLI prints it)
JOURNAL_VARIABLE = "MAXIMUS_SYSTEM_JOURNAL"
DEFAULT_JOURNAL = Path("/var/lib/maximus/system-journal.json")
_BUSY_WAIT_S = 15.0  # a server's processes, asked to stop, let go of a mount within this


WAIT_VARIABLE = "MAXIMUS_MACHINE_WAIT"
WAIT = limits.Limit(0, limits.DAY_S, limits.SECONDS)


def journal_path() -> Path:
    return Path(os.environ.get(JOURNAL_VARIABLE) or DEFAULT_JOURNAL)


def machine_wait() -> float:
    """``$MAXIMUS_MACHINE_WAIT``: seconds a command that changes the machine waits for another Maximus that holds its
    knobs and storage, before it says so and stops (0: it stops at once)."""
    text = os.environ.get(WAIT_VARIABLE, "").strip()
    try:
        value = float(text) if text else 0.0
    except ValueError:
        value = math.nan
    limits.check(f"${WAIT_VARIABLE}", value, WAIT)
    return value


class Entry:
    """One change to the machine, undone by ``undo()`` (an ``OSError`` or ``EngineError`` when it cannot be)."""

    kind: ClassVar[str]
    survives_reboot: ClassVar[bool] = False

    def undo(self) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Written(Entry):
    """A kernel setting (sysctl or sysfs file) written: ``before`` is put back."""

    knob: str
    path: str
    before: str
    asked: str
    kind: ClassVar[str] = "write"

    def undo(self) -> None:
        Path(self.path).write_text(self.before)

    def describe(self) -> str:
        return f"{self.knob}={self.before} (was set to {self.asked})"


@dataclass(frozen=True)
class Created(Entry):
    """A file (a loop device's backing file) or a directory (a mount point) Maximus made: removed. A directory with
    ``contents`` is Maximus's private one (the power-cut layer's control socket and log) and goes with what is in it;
    any other goes only when empty."""

    path: str
    directory: bool = False
    contents: bool = False
    kind: ClassVar[str] = "created"
    survives_reboot: ClassVar[bool] = True

    def undo(self) -> None:
        try:
            if self.contents:
                shutil.rmtree(self.path)
            else:
                os.rmdir(self.path) if self.directory else os.unlink(self.path)
        except (FileNotFoundError, NotADirectoryError):
            pass  # never made (the making failed after it was journaled), or not Maximus's
        except OSError as error:
            if error.errno != errno.ENOTEMPTY:  # a directory something else now uses too stays
                raise

    def describe(self) -> str:
        return f"removed {self.path}"


@dataclass(frozen=True)
class Attached(Entry):
    """A loop device attached to a backing file of Maximus's: detached, if it still is ours."""

    device: str
    backing: str
    kind: ClassVar[str] = "loop"

    def undo(self) -> None:
        backing = Path("/sys/block") / Path(self.device).name / "loop/backing_file"
        try:
            if backing.read_text().strip() != self.backing:
                return  # detached already, and reused by someone else since: not ours to detach
        except FileNotFoundError:
            return
        run_tool(["losetup", "-d", self.device])

    def describe(self) -> str:
        return f"detached {self.device}"


@dataclass(frozen=True)
class Zram(Entry):
    """A zram device Maximus added (``hot_add``): reset, then removed."""

    index: int
    size: int = 0  # the disk size Maximus gave it: a device of that index with another is not Maximus's
    kind: ClassVar[str] = "zram"

    def undo(self) -> None:
        device = Path(f"/sys/block/zram{self.index}")
        if not device.exists() or int((device / "disksize").read_text()) not in (0, self.size):
            return
        if mounted_device(f"/dev/zram{self.index}"):
            raise EngineError(f"/dev/zram{self.index} is mounted still")
        (device / "reset").write_text("1")
        Path("/sys/class/zram-control/hot_remove").write_text(str(self.index))

    def describe(self) -> str:
        return f"removed /dev/zram{self.index}"


@dataclass(frozen=True)
class Mounted(Entry):
    """A file system Maximus mounted: unmounted, once the processes of a server it started there have let go."""

    target: str
    source: str
    kind: ClassVar[str] = "mount"

    def undo(self) -> None:
        deadline, asked = time.monotonic() + _BUSY_WAIT_S, False
        while mounted_source(Path(self.target)) == self.source:
            done = subprocess.run(["umount", self.target], capture_output=True, text=True)
            if done.returncode == 0:
                return
            if not asked:  # a server Maximus started here before it could journal its pid (killed meanwhile)
                _end_all(working_in(Path(self.target)))
                asked = True
                continue
            if time.monotonic() > deadline:  # detached now, gone with the last process that holds a file in it
                run_tool(["umount", "--lazy", self.target])
                _log.warning("%s was still in use (%s): detached; its device is freed when those processes end",
                             self.target, one_line(done.stderr))
                return
            time.sleep(0.2)

    def describe(self) -> str:
        return f"unmounted {self.target}"


@dataclass(frozen=True)
class Started(Entry):
    """A server Maximus started on a file system it mounted: stopped (TERM, then KILL), if that pid is still it."""

    pid: int
    start_time: int  # the kernel's start time of the process, so that a reused pid is never signalled
    what: str = "the server process"  # how ``describe`` names it: the power-cut layer's file system is one too
    kind: ClassVar[str] = "process"

    def undo(self) -> None:
        if start_time(self.pid) == self.start_time:
            _end_all([(self.pid, self.start_time)])

    def describe(self) -> str:
        return f"stopped {self.what} {self.pid}"


@dataclass(frozen=True)
class Cgroup(Entry):
    """A cgroup Maximus made: its processes moved back to its parent, then removed."""

    path: str
    kind: ClassVar[str] = "cgroup"

    def undo(self) -> None:
        group = Path(self.path)
        deadline = time.monotonic() + _BUSY_WAIT_S
        while group.exists():
            for pid in (group / "cgroup.procs").read_text().split():  # a child forked meanwhile: the next turn
                try:
                    (group.parent / "cgroup.procs").write_text(pid)
                except ProcessLookupError:
                    pass
            try:
                group.rmdir()
            except OSError:  # a process still leaving it
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def describe(self) -> str:
        return f"removed the cgroup {self.path}"


_KINDS: dict[str, type[Entry]] = {kind.kind: kind for kind in (Written, Created, Attached, Zram, Mounted, Started,
                                                                 Cgroup)}


def _decode(data: dict) -> Entry:
    kind = _KINDS[data.pop("kind", Written.kind)]  # the first journals listed written settings only
    return kind(**{field.name: data[field.name] for field in fields(kind) if field.name in data})  # type: ignore


def _encode(entry: Entry) -> dict:
    return {"kind": entry.kind, **asdict(entry)}  # type: ignore[call-overload]


class Journal:
    """The entries of this process's changes not yet undone, kept on disk as they are, each owned by the scope that
    made it: a run's knobs are put back after the run, its experiment's layout (and the servers started on it)
    after the experiment, whatever order they were recorded in."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[Entry] = []
        self._owners: list[int] = []  # the scope of each entry
        self._scopes = 0

    @contextmanager
    def scope(self) -> Iterator[Scope]:
        """A scope whose changes are undone after the block however it ends; an undo that fails while another error
        is on its way is noted, not put in its place."""
        self._scopes += 1
        scope = Scope(self, self._scopes)
        try:
            yield scope
        except BaseException:
            try:
                self.undo(scope.number)
            except EngineError as error:
                _log.warning("%s", error)
            raise
        self.undo(scope.number)

    def record(self, entry: Entry, scope: int) -> None:
        """On disk before the caller makes the change."""
        self.entries.append(entry)
        self._owners.append(scope)
        self._write()

    def undo(self, scope: int | None = None) -> list[Entry]:
        """Undo the entries of ``scope`` (all of them when None), the last first; one that fails stays journaled
        (``maximus system restore`` tries again) and the rest go on, except those it recorded before (a mount
        still busy keeps its device and backing file)."""
        undone: list[Entry] = []
        failed: list[tuple[Entry, str]] = []
        with _signals_held():  # a second Ctrl-C must not cut the undoing short: it ends the command after
            for index in reversed(range(len(self.entries))):
                entry = self.entries[index]
                if scope is not None and self._owners[index] != scope:
                    continue
                if failed and not isinstance(entry, Written):
                    failed.append((entry, "left for the one before it"))
                    continue
                try:
                    entry.undo()
                except (OSError, EngineError) as error:
                    failed.append((entry, str(error) if isinstance(error, EngineError) else one_line(str(error))))
                    continue
                undone.append(entry)
                del self.entries[index], self._owners[index]
                self._write()  # each undone change leaves the journal at once: never undone twice
        if failed:
            first, reason = failed[0]
            raise EngineError(f"could not undo {len(failed)} change(s) to the machine, first {first.describe()}: "
                              f"{reason}; `maximus system restore` tries again")
        return undone

    def _write(self) -> None:
        """Atomically and durably; no journal at all once nothing is left to undo."""
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        with open(partial, "w") as file:
            json.dump({"boot_id": environment.boot_id(), "changes": [_encode(entry) for entry in self.entries]},
                      file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the new name too, or a power cut could bring back the journal before this change
        finally:
            os.close(directory)

    def forget_last(self) -> None:
        """The last entry recorded, whose change could not be made at all: nothing to undo."""
        self.entries.pop()
        self._owners.pop()
        self._write()


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back for the block (delivered after it), where this thread can hold them."""
    held_back = {signal.SIGINT, signal.SIGTERM}
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, held_back)
    except (OSError, ValueError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


@dataclass(frozen=True)
class Scope:
    """Where a group of changes is recorded: they are undone together when the scope ends."""

    journal: Journal
    number: int

    def record(self, entry: Entry) -> None:
        self.journal.record(entry, self.number)

    def forget_last(self) -> None:
        self.journal.forget_last()


class Hold:
    """A hold on this process's journal: taken, under its lock (and a killed Maximus's leftovers undone first), by
    the first of its users that changes the machine, shared by those nested in it, and let go when the outermost
    ends. Whoever must share the journal shares the hold, explicitly: an experiment's kept layouts hold it, and
    each of its runs records its knobs in the same journal. Two holds at once in one process would wait for each
    other's lock."""

    def __init__(self) -> None:
        self._journal: Journal | None = None

    @contextmanager
    def journal(self) -> Iterator[Journal]:
        if self._journal is not None:
            yield self._journal
            return
        path = journal_path()
        with locks.held(_lock_path(path), "the operating system's knobs and storage",
                        f"wait for it to finish, or have this command wait for it with ${WAIT_VARIABLE}=SECONDS; its "
                        "changes are put back when it ends", machine_wait()):
            undo_leftovers(path)
            self._journal = Journal(path)
            try:
                yield self._journal
            finally:
                self._journal = None


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def undo_leftovers(path: Path) -> list[Entry]:
    """What a Maximus that did not finish left changed, undone (the caller holds the lock)."""
    try:
        recorded = json.loads(path.read_text())
        entries = [_decode(dict(data)) for data in recorded.get("changes", [])]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise EngineError(f"the journal of changes to the machine {path} cannot be read ({error}): undo by hand "
                          "what it lists, then remove it") from None
    if recorded.get("boot_id") != environment.boot_id():
        gone = [entry for entry in entries if not entry.survives_reboot]
        if gone:
            _log.info("the machine restarted since a Maximus made %d change(s): the kernel booted with its own "
                      "settings, and no mount or device of then is left", len(gone))
        entries = [entry for entry in entries if entry.survives_reboot]
    journal = Journal(path)
    for entry in entries:
        journal.entries.append(entry)
        journal._owners.append(0)
    undone = journal.undo()
    for entry in undone:
        _log.info("put back what a Maximus that did not finish left: %s", entry.describe())
    return undone


def recover(strict: bool = False) -> list[Entry]:
    """Before a command does anything else: undo what a Maximus that did not finish left changed. Nothing while
    the Maximus that made the changes still runs, or when there is nothing to undo; a user who is not root is
    told to run ``maximus system restore`` as root. What cannot be undone is a note, and the command goes on
    (a command that changes the machine itself stops at the journal's lock), unless ``strict``."""
    path = journal_path()
    if not path.exists():
        return []
    if os.geteuid() != 0:
        _log.info("a Maximus that did not finish left the machine changed (%s): run `maximus system restore` as "
                  "root", path)
        return []
    try:
        with locks.held(_lock_path(path), "the operating system's knobs and storage", ""):
            return undo_leftovers(path)
    except locks.Busy:
        return []  # its owner still runs, and undoes them itself
    except EngineError as error:
        if strict:
            raise
        _log.warning("%s", error)
        return []


def working_in(directory: Path) -> list[tuple[int, int]]:
    """The processes (pid, start time) whose working directory is in ``directory``, a file system of Maximus's: the
    servers it started there (a database server works in its data directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        start = start_time(int(entry.name))
        if start is not None and (cwd == str(directory) or cwd.startswith(f"{directory}/")):
            found.append((int(entry.name), start))
    return found


def _end_all(processes: list[tuple[int, int]]) -> None:
    """TERM, then KILL after a while, to each process that still is the one named (pid and start time)."""
    deadline, killed = time.monotonic() + _BUSY_WAIT_S, False
    for pid, start in processes:
        _signal(pid, start, signal.SIGTERM)
    while any(start_time(pid) == start for pid, start in processes):
        if time.monotonic() > deadline:
            if killed:
                raise EngineError(f"processes {', '.join(str(pid) for pid, _ in processes)} will not end")
            for pid, start in processes:
                _signal(pid, start, signal.SIGKILL)
            deadline, killed = time.monotonic() + _BUSY_WAIT_S, True
        time.sleep(0.1)


def _signal(pid: int, start: int, number: int) -> None:
    if start_time(pid) == start:
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass


def mounted_device(source: str) -> bool:
    return any(mount.source == source for mount in
               environment.parse_mountinfo(Path("/proc/self/mountinfo").read_text()))


def mounted_source(target: Path) -> str | None:
    """The source (device) mounted at ``target`` now (the topmost, where several are), or None."""
    mounts = environment.parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    sources = [mount.source for mount in mounts if mount.mount_point == str(target)]
    return sources[-1] if sources else None


def run_tool(command: list[str], failure: Callable[[str], str] | None = None, cwd: str | None = None,
             refused: type[MaximusError] = EngineError) -> str:
    """A system tool's standard output; its failure as one line: ``refused`` (UserError where the tool refuses
    options the user gave), a tool that is not installed always an EngineError."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd)
    except FileNotFoundError:
        raise EngineError(f"{command[0]} is not installed") from None
    if done.returncode != 0:
        message = one_line(done.stderr or done.stdout) or f"exit status {done.returncode}"
        raise refused(failure(message) if failure else f"{' '.join(command)} failed: {message}")
    return done.stdout


def one_line(text: str) -> str:
    return " ".join(text.split())
