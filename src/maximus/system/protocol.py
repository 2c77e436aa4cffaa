"""The one protocol of every kind of change Maximus makes to the machine for a run: kernel settings, the server's and
the client's scheduling, a storage layout, a throttle.

Each kind is checked before anything is made or started (``check``: one line, a ``UserError``, when the user did
not allow it, when this engine cannot honour it), then applied at its ``Stage`` of the run (``applied``: a context
whose block the change holds for). Applying records each change in the journal before it is made; leaving the block
restores them, the last first, as the next command does after a SIGKILL. Changes to Maximus's own process alone die
with it, and are put back from memory.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Mapping, Protocol, runtime_checkable

from maximus.system.changes import require
from maximus.system.journal import Journal
from maximus.system.storage import KeptLayouts, Placement


class Stage(Enum):
    """When in a run a kind of change is applied, and for how long it holds."""

    PLACE = "before the engine is made, whose work directory is on it; for the run, or as long as it is kept"
    ENGINE = "once the engine exists (a disk's queue is the one of its data path), before its server starts"
    SERVER = "once the server runs, on its processes, and its children inherit it"
    WORK = "around the load and the terminals, on the processes that do them"


class Capable(Protocol):
    @property
    def server_process(self) -> bool: ...


class Database(Protocol):
    """What a change asks of the engine of the run it is made for (``maximus.engines.Engine`` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def capabilities(self) -> Capable: ...

    @property
    def manages_server(self) -> bool: ...

    @property
    def workdir(self) -> Path: ...

    def data_path(self) -> Path: ...

    def server_pid(self) -> int | None: ...

    def crash(self) -> None: ...


@dataclass
class Target:
    """What the changes of one run are made for, filled in as its stages pass: its knobs (the operating system's,
    canonical) and whether the user allowed them; its engine (the one named, for the checks, then the one that
    runs); where its database is (``placement``: the layout's mount point, or the work directory); and the layouts
    it may share, whose journal it records its own changes in."""

    knobs: Mapping[str, str]
    allowed: bool | None  # None: the knobs are only checked (an experiment file's steps), the opt-in is the runner's
    engine: Database
    layouts: KeptLayouts
    placement: Placement = field(init=False)

    def __post_init__(self) -> None:
        self.placement = Placement(self.engine.workdir)

    @property
    def on_users_server(self) -> bool:
        """The database is on a server of the user's: Maximus neither starts it nor chooses where its data is."""
        return self.engine.capabilities.server_process and not self.engine.manages_server

    def require(self, names: list[str]) -> None:
        """The user's opt-in and root for changes to ``names``, unless this is a check of the knobs alone."""
        if self.allowed is not None:
            require(names, self.allowed)

    def journal(self) -> AbstractContextManager[Journal]:
        """The journal the run's changes are recorded in (taken with its lock, unless the run's layouts hold it)."""
        return self.layouts.hold.journal()


class MachineChange(Protocol):
    """One kind of change, made from the knobs of its kind a run sets (``of``: None when it sets none)."""

    def check(self, target: Target) -> None:
        """Before anything is made or started: a one-line ``UserError`` when the run cannot have this change (the
        user did not allow it, Maximus is not root, the engine cannot honour it)."""

    def applied(self, target: Target) -> AbstractContextManager[list[str]]:
        """The change in force for the block (journaled before each part of it is made), put back after it however
        it ends; yields a warning for each part the kernel took otherwise than asked."""


@dataclass(frozen=True)
class Seen:
    """What a change saw of the run's processes so far: for the run's environment, and a warning for each thing the
    run should be read with (processes the kernel's OOM killer ended), which is also the cause of a run that failed."""

    environment: dict[str, object] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@runtime_checkable
class Observed(Protocol):
    """A change whose effect is measured while it holds (a memory limit's peak usage): read as the run begins and
    before it ends, while the change is still in force."""

    def seen(self) -> Seen: ...

    def failed(self) -> None:
        """The run failed while the change holds, and its engine is stopped next: undo what would keep it from
        stopping."""
