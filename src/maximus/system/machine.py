"""A run's changes to the machine, entered once (``changed``): every kind of change its knobs name checked before
anything is made, then each applied at its stage, and all put back, the last first, when the run ends.

The stages are the table's, not the caller's: a layout before the engine is made (its work directory is on it); the
kernel's settings once the engine exists (a disk's queue is the one of its data path); the server's scheduling once
the server runs (``Machine.server_started``); a throttle and the client's scheduling around the load and the
terminals (``Machine.working``). Adding a kind of change is one class (``kinds``) and one row of ``CHANGES``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, Iterator, Mapping, Sequence, TypeVar

from maximus.system.kinds import (ClientScheduling, KernelSettings, MemoryLimit, ServerOnLayout, ServerScheduling,
                                  StorageLayout, Throttle)
from maximus.system.knobs import current_values, durability_warnings
from maximus.system.processes import schedules
from maximus.system.protocol import Database, MachineChange, Observed, Seen, Stage, Target
from maximus.system.storage import KeptLayouts

CHANGES: tuple[tuple[Stage, Callable[[Mapping[str, str]], MachineChange | None]], ...] = (
    (Stage.PLACE, StorageLayout.of),
    (Stage.ENGINE, KernelSettings.of),
    (Stage.SERVER, ServerOnLayout.of),
    (Stage.SERVER, ServerScheduling.of),
    (Stage.SERVER, MemoryLimit.of_server),
    (Stage.WORK, Throttle.of),
    (Stage.WORK, ClientScheduling.of),
    (Stage.WORK, MemoryLimit.of_client),
)

E = TypeVar("E", bound=Database)


@dataclass(frozen=True)
class Done:
    """What a run's changes did, as the run stores it when it begins."""

    environment: dict[str, object]  # every machine knob's value now, how client and server are scheduled, the layout
    durability: list[str]  # a warning for each knob that weakens durability
    warnings: list[str]  # a warning for each change the kernel took otherwise than asked


class Machine(Generic[E]):
    """A run's changes in force, and its engine, made on the work directory they chose."""

    def __init__(self, changes: list[tuple[Stage, MachineChange]], target: Target, run: ExitStack, engine: E,
                 warnings: list[str]) -> None:
        self.engine = engine
        self._changes, self._target, self._run, self._warnings = changes, target, run, warnings

    def server_started(self) -> None:
        """The engine's server runs now: the server-stage changes, until the run ends."""
        self._warnings += _apply(self._changes, Stage.SERVER, self._target, self._run)

    @contextmanager
    def working(self) -> Iterator[None]:
        """The work-stage changes for the block: the load and the terminals."""
        with ExitStack() as work:
            self._warnings += _apply(self._changes, Stage.WORK, self._target, work)
            yield

    def done(self) -> Done:
        """What the changes did, read now: the run stores it as it begins."""
        placement = self._target.placement
        environment: dict[str, object] = {"os_knobs": current_values(self.engine.data_path()),
                                          "processes": schedules(self.engine.server_pid())}
        return Done(environment | ({"layout": placement.record} if placement.record else {})
                    | self.seen().environment, durability_warnings(self._target.knobs), list(self._warnings))

    def failed(self) -> None:
        """The run failed: each change in force that could keep its engine from stopping undoes that first."""
        for _, change in self._changes:
            if isinstance(change, Observed):
                change.failed()

    def seen(self) -> Seen:
        """What the changes in force saw of the run's processes so far (a memory limit's peak usage and OOM kills),
        read before the run ends while they still hold."""
        seen = [change.seen() for _, change in self._changes if isinstance(change, Observed)]
        environment: dict[str, object] = {}
        for part in seen:
            for key, value in part.environment.items():  # ``memory``: the server's and the client's side by side
                before = environment.get(key)
                environment[key] = {**before, **value} if isinstance(before, dict) and isinstance(value, dict) \
                    else value
        return Seen(environment, [warning for part in seen for warning in part.warnings])


@contextmanager
def changed(knobs: Mapping[str, str], engine: Database, engine_on: Callable[[Path], AbstractContextManager[E]],
            allowed: bool, layouts: KeptLayouts | None = None,
            extra: Sequence[tuple[Stage, MachineChange]] = ()) -> Iterator[Machine[E]]:
    """The changes the operating-system ``knobs`` (canonical) name, for a run on ``engine`` (the one named, on the
    work directory given), in force for the block, with the engine that runs (``engine_on``, entered on the work
    directory they chose: a layout's). ``allowed``: the user allowed changes to the machine; ``layouts``: those an
    experiment keeps between its runs (else the run keeps its own); ``extra``: changes no knob names (a crash test's
    power-cut layer). Each change is checked before any is made."""
    changes = [*_named(knobs), *extra]
    with ExitStack() as run:
        target = Target(knobs, allowed, engine, layouts if layouts is not None else run.enter_context(KeptLayouts()))
        _check(changes, target)
        warnings = _apply(changes, Stage.PLACE, target, run)
        target.engine = running = run.enter_context(engine_on(target.placement.workdir))
        warnings += _apply(changes, Stage.ENGINE, target, run)
        yield Machine(changes, target, run, running, warnings)


def check_changes(knobs: Mapping[str, str], engine: Database) -> None:
    """What a run on ``engine`` checks of the changes its ``knobs`` name before anything is made, the opt-in and root
    aside (the runner's): an experiment file's steps are checked so, all of them before its first run."""
    _check(_named(knobs), Target(knobs, None, engine, KeptLayouts()))


def _named(knobs: Mapping[str, str]) -> list[tuple[Stage, MachineChange]]:
    return [(stage, change) for stage, kind in CHANGES if (change := kind(knobs)) is not None]


def _check(changes: list[tuple[Stage, MachineChange]], target: Target) -> None:
    for _, change in changes:
        change.check(target)


def _apply(changes: list[tuple[Stage, MachineChange]], stage: Stage, target: Target, until: ExitStack) -> list[str]:
    """The changes of ``stage``, in the table's order, held until ``until`` closes; their warnings."""
    return [warning for when, change in changes if when is stage
            for warning in until.enter_context(change.applied(target))]
