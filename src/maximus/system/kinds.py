"""The kinds of change to the machine, each an implementation of ``protocol.MachineChange`` made from the knobs of its
kind a run sets; ``machine.CHANGES`` lists them with the stage at which each applies."""

from __future__ import annotations

import importlib.util
import os
import shutil
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Iterator, Mapping

from maximus.errors import EngineError, MaximusError, UserError
from maximus.pids import start_time
from maximus.system import changes, memory, processes, throttle
from maximus.durability.mount import FSNAME, PowerCutMount
from maximus.system.journal import Created, Mounted, Started
from maximus.system.knobs import machine
from maximus.system.protocol import Database, Seen, Target
from maximus.system.storage import STORAGE, THROTTLES, Layout, Placement, placed


class KernelSettings:
    """sysctl and sysfs knobs (``knobs.OS_KNOBS``): a disk's queue is the one that holds the engine's data."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    @classmethod
    def of(cls, knobs: Mapping[str, str]) -> KernelSettings | None:
        chosen = machine(knobs)
        return cls(chosen) if chosen else None

    def check(self, target: Target) -> None:
        target.require(list(self.settings))

    def applied(self, target: Target) -> AbstractContextManager[list[str]]:
        return changes.applied(self.settings, target.engine.data_path(), target.allowed is True, target.layouts.hold)


class StorageLayout:
    """The file system the run's database is put on (``storage.*`` knobs), or the work directory's disk a throttle
    names: made under the named engine's work directory, or kept from an earlier run of the run's layouts."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    @classmethod
    def of(cls, knobs: Mapping[str, str]) -> StorageLayout | None:
        chosen = {name: value for name, value in knobs.items() if name in STORAGE}
        return cls(chosen) if chosen else None

    def check(self, target: Target) -> None:
        target.require(list(self.settings))
        layout = Layout.of(self.settings)  # a layout that cannot be is one line here, before anything is made
        if layout is not None and layout.made and target.on_users_server:
            names = ", ".join(sorted(name for name in self.settings if name not in THROTTLES))
            raise UserError(f"{names}: {target.engine.name} runs on a server of yours (--dsn), whose data stays where "
                            "it keeps it: a file system Maximus made would hold no database; put your server's data "
                            "on the file system to measure yourself, or let Maximus manage a server")

    @contextmanager
    def applied(self, target: Target) -> Iterator[list[str]]:
        with placed(self.settings, target.placement.workdir, target.layouts) as placement:
            target.placement = placement
            yield placement.warnings()


class ServerOnLayout:
    """A server Maximus started on a layout it made: journaled in the layout's own scope, so that it is stopped before
    the layout is unmounted, even by the next command after a SIGKILL. Present whenever a layout is."""

    @classmethod
    def of(cls, knobs: Mapping[str, str]) -> ServerOnLayout | None:
        return cls() if StorageLayout.of(knobs) else None

    def check(self, target: Target) -> None:
        pass  # the layout's check is this one's

    @contextmanager
    def applied(self, target: Target) -> Iterator[list[str]]:
        placement, pid = target.placement, target.engine.server_pid()
        start = start_time(pid) if pid else None
        if placement.scope is not None and placement.layout is not None and placement.layout.made and start:
            placement.scope.record(Started(pid, start))  # type: ignore[arg-type]
        yield []


class ServerScheduling:
    """``server.*`` knobs: on the main process of a server Maximus started and its children, inherited by those it
    forks later; nothing to put back, they end with it."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    @classmethod
    def of(cls, knobs: Mapping[str, str]) -> ServerScheduling | None:
        chosen = processes.server_knobs(knobs)
        return cls(chosen) if chosen else None

    def check(self, target: Target) -> None:
        target.require(list(self.settings))
        engine = target.engine
        if not engine.capabilities.server_process or not engine.manages_server:
            raise UserError(f"{', '.join(sorted(self.settings))}: {engine.name} runs no server process of Maximus's "
                            "here (an embedded engine, or a server of yours): use the client.* knobs")

    @contextmanager
    def applied(self, target: Target) -> Iterator[list[str]]:
        processes.apply_to_server(self.settings, target.engine.server_pid())
        yield []


class Throttle:
    """``storage.*_iops`` and ``storage.*_bps``: the processes that do the database's I/O, a managed server's or
    (embedded) Maximus's own with its terminals and loaders, throttled on the layout's device."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    @classmethod
    def of(cls, knobs: Mapping[str, str]) -> Throttle | None:
        chosen = {name: value for name, value in knobs.items() if name in THROTTLES}
        return cls(chosen) if chosen else None

    def check(self, target: Target) -> None:
        names = ", ".join(sorted(self.settings))
        target.require(sorted(self.settings))
        if target.on_users_server:
            raise UserError(f"{names}: {target.engine.name} runs no server process of Maximus's here (a server of "
                            "yours): throttle it yourself, or let Maximus manage one")
        if not throttle.has_blkio():
            raise UserError(f"{names}: this kernel has no cgroup v1 blkio controller at {throttle.BLKIO}")

    @contextmanager
    def applied(self, target: Target) -> Iterator[list[str]]:
        engine = target.engine
        io_pid = (engine.server_pid() if engine.capabilities.server_process else None) or os.getpid()
        with target.journal() as journal, throttle.throttled(target.placement, io_pid, journal):
            yield []


class ClientScheduling:
    """``client.*`` knobs: on this process, whose terminals and loaders inherit them, put back after the work."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    @classmethod
    def of(cls, knobs: Mapping[str, str]) -> ClientScheduling | None:
        chosen = processes.scheduling_knobs(knobs, "client")
        return cls(chosen) if chosen else None

    def check(self, target: Target) -> None:
        target.require(list(self.settings))

    @contextmanager
    def applied(self, target: Target) -> Iterator[list[str]]:
        with processes.client_applied(self.settings):
            yield []


class MemoryLimit:
    """``server.memory`` or ``client.memory``: the side's processes in a memory cgroup whose limit bounds their RAM,
    page cache included (``memory``); a managed server's main process and children, born in it from then on, or this
    process, whose terminals and loaders are (and on an embedded engine do the database's I/O). Its usage is read
    for the run's record, its OOM kills named."""

    def __init__(self, knob: str, limit: str) -> None:
        self.knob, self.limit = knob, limit
        self.group: memory.LimitedGroup | None = None  # while applied
        self.engine: Database | None = None  # whose server the group holds, while applied

    @classmethod
    def of_server(cls, knobs: Mapping[str, str]) -> MemoryLimit | None:
        return cls("server.memory", knobs["server.memory"]) if "server.memory" in knobs else None

    @classmethod
    def of_client(cls, knobs: Mapping[str, str]) -> MemoryLimit | None:
        return cls("client.memory", knobs["client.memory"]) if "client.memory" in knobs else None

    @property
    def side(self) -> str:
        return self.knob.split(".", 1)[0]

    def check(self, target: Target) -> None:
        target.require([self.knob])
        engine = target.engine
        if self.side == "server" and (not engine.capabilities.server_process or not engine.manages_server):
            raise UserError(f"{self.knob}: {engine.name} runs no server process of Maximus's here (an embedded engine, "
                            "or a server of yours): use client.memory, or bound your server's memory yourself")
        if not memory.has_memory():
            raise UserError(f"{self.knob}: this kernel has no cgroup v1 memory controller at {memory.MEMORY}")

    @contextmanager
    def applied(self, target: Target) -> Iterator[list[str]]:
        engine = target.engine
        pid = engine.server_pid() if self.side == "server" else os.getpid()
        if pid is None:
            raise UserError(f"{self.knob}: {engine.name}'s server is not running")
        self.engine = engine
        with target.journal() as journal, \
                memory.limited(self.knob, int(self.limit), pid, journal, engine.data_path()) as self.group:
            try:
                yield []
            except Exception as error:  # a server or terminal the OOM killer ended: the cause, named first
                kills = self.group.oom_kills()
                if kills:
                    what = str(error) if isinstance(error, MaximusError) else f"{type(error).__name__}: {error}"
                    raise EngineError(f"{self._killed(kills)}; then {' '.join(what.split())}") from None
                raise
            finally:
                self.group = self.engine = None

    def seen(self) -> Seen:
        if self.group is None:
            return Seen()
        usage = self.group.usage()
        kills = int(usage["oom_kills"])  # type: ignore[call-overload]
        if kills:  # the run failed with them: the limit lifted, so that the server can stop
            self.group.lift()
        return Seen({"memory": {self.side: usage}}, [self._killed(kills)] if kills else [])

    def failed(self) -> None:
        """After OOM kills, no limit any more and a server side's server ended at once: one that lost a process to the
        killer recovers from a crash, and under the limit a fast stop waited for that recovery up to pg_ctl's 120 s
        (its data is rebuilt or restored before the next run anyway)."""
        if self.group is None or not self.group.oom_kills():
            return
        self.group.lift()
        if self.engine is not None and self.side == "server":
            try:
                self.engine.crash()
            except MaximusError:  # already gone
                pass

    def _killed(self, kills: int) -> str:
        return (f"the kernel's OOM killer ended {kills} process(es) held to {self.knob}={_mb(self.limit)}: the limit "
                "is below what they need for themselves, their page cache aside")


def _mb(size: str) -> str:
    return f"{int(size) / 2**20:g}MB"


class PowerCutLayer:
    """The database's files on the power-cut layer (``maximus.durability``) for a crash test's power cuts: a FUSE file
    system over ``power-cut/disk`` in the work directory, mounted at ``power-cut/mounted``, where the engine is made.
    Not a knob: a crash test asks for it. The mount and the file system's process are journaled, so the next command
    unmounts it after a SIGKILL of Maximus; the disk stays, with the databases built on it, for the next test."""

    DISK, MOUNTED = "power-cut/disk", "power-cut/mounted"

    def __init__(self, weights: tuple[float, ...] = (1.0, 1.0, 1.0)) -> None:
        self.weights = weights  # a pending write's odds at a cut: kept, dropped, garbled, torn
        self.mount: PowerCutMount | None = None  # while applied

    def check(self, target: Target) -> None:
        if StorageLayout.of(target.knobs):
            raise UserError("a power cut stands for the disk itself, under any file system: a crash test in power mode "
                            "takes no storage.* layout (use --mode process to crash a server on one)")
        if target.on_users_server:
            raise UserError(f"a power cut needs {target.engine.name}'s files on Maximus's power-cut layer: it needs a "
                            "server Maximus manages, not one of yours (--dsn)")
        missing = power_cut_missing()
        if missing:
            raise UserError(missing)

    @contextmanager
    def applied(self, target: Target) -> Iterator[list[str]]:
        disk, mounted = target.placement.workdir / self.DISK, target.placement.workdir / self.MOUNTED
        disk.mkdir(parents=True, exist_ok=True)
        mounted.mkdir(exist_ok=True)
        with target.journal() as journal, journal.scope() as scope:
            scope.record(Mounted(str(mounted), FSNAME))  # before the mount: its undo is nothing until there is one
            def journal_layer(pid: int, private: Path) -> None:  # at each mount, the cut's included
                scope.record(Created(str(private), directory=True, contents=True))
                scope.record(Started(pid, start_time(pid) or 0, "the power-cut file system's process"))

            with PowerCutMount(disk, mounted, self.weights, journal_layer) as self.mount:
                target.placement = Placement(mounted, record={"power_cut": str(disk)})
                try:
                    yield []
                finally:
                    self.mount = None


def power_cut_missing() -> str | None:
    """Why the power-cut layer cannot mount here, in one line, or None: it needs ``fusermount3`` and pyfuse3."""
    if shutil.which("fusermount3") is None:
        return "a power cut needs FUSE's fusermount3: apt-get install fuse3"
    if importlib.util.find_spec("pyfuse3") is None or importlib.util.find_spec("trio") is None:
        return "a power cut needs the durability extra: pip install 'maximus[durability]'"
    return None
