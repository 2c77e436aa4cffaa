"""Process knobs: the scheduling of the server's processes and of Maximus's own (the client), a variable like any
other. On a small machine, client and server on separate cores, or a server at a higher priority, are classic
steps of the tuning articles.

They change processes, not the machine: a server's knobs are set on its main process and the children it has,
and the children it forks later inherit them (a new backend for every terminal); the client's are set on this
process before it starts the terminals and loaders, which inherit them, and put back when the run ends. Nothing
outlives the run, so nothing is journaled. The memory knobs (``MEMORY_KNOBS``) are declared here beside them but
applied as a cgroup, which is journaled (``memory``, ``kinds.MemoryLimit``).
"""

from __future__ import annotations

import os
import re
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

from maximus.errors import EngineError, UserError
from maximus.knobs import Choice, Integer, Size
from maximus.knobs.registry import ValueType
from maximus.samplers import processes

_IONICE_CLASSES = {"realtime": "1", "best-effort": "2", "idle": "3"}


@dataclass(frozen=True)
class CpuList:
    """CPUs as the kernel lists them: ``1``, ``0-1``, ``0,2-3``; each must exist on this machine."""

    def parse(self, raw: str) -> str:
        cpus = cpu_set(raw)
        present = os.sched_getaffinity(0) | set(range(os.cpu_count() or 1))
        if not cpus or not cpus <= present:
            raise ValueError(f"expected {self.describe()} of this machine's CPUs 0-{max(present)}")
        return cpu_text(cpus)

    def describe(self) -> str:
        return "a CPU list such as 1, 0-1 or 0,2-3"


def cpu_set(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.strip().split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise ValueError(f"expected {CpuList().describe()}")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        cpus.update(range(low, high + 1))
    return cpus


def cpu_text(cpus: Iterable[int]) -> str:
    """The shortest list: ``0-3,6``."""
    ordered, runs = sorted(set(cpus)), []  # type: list[int], list[list[int]]
    for cpu in ordered:
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{low}-{high}" if high > low else str(low) for low, high in runs)


@dataclass(frozen=True)
class ProcessKnob:
    name: str
    type: ValueType
    description: str
    advice: str
    risk: str = ""  # what a bad value costs

    @property
    def side(self) -> str:
        return self.name.split(".", 1)[0]  # server or client

    @property
    def setting(self) -> str:
        return self.name.split(".", 1)[1]  # nice, ionice, cpus or memory

    def parse(self, raw: object) -> str:
        try:
            return self.type.parse(str(raw))
        except ValueError as error:
            raise UserError(f"bad value {raw!r} for knob {self.name}: {error}") from None

    def weakens_durability(self, value: str) -> bool:
        return False  # scheduling changes when work is done, never whether it is kept


_NICE = ("Lower is more CPU for the process (-20 to 19); a server a little above its clients keeps them from "
         "preempting it in the middle of a transaction on a saturated machine.")
_MEMORY = ("Bounds the OS page cache the database may use, so that a storage-bound workload reads from the device "
           "without a table larger than RAM; the limit counts the processes' own memory (a server's shared buffers "
           "as they fill) as well as their cache.")
_MEMORY_RISK = ("below what the processes need for themselves, the kernel's OOM killer ends one of them and the run "
                "fails")
_CPUS = ("Client and server on separate cores is a classic step on small machines: neither evicts the other's "
         "caches, at the price of cores one side may leave idle.")

PROCESS_KNOBS: tuple[ProcessKnob, ...] = (
    ProcessKnob("server.nice", Integer(-20, 19), "Scheduling priority of the server's processes.", _NICE),
    ProcessKnob("server.ionice", Choice(tuple(_IONICE_CLASSES)), "I/O scheduling class of the server's processes "
                "(ionice; honoured by the bfq scheduler).", "idle or realtime only under bfq: the other schedulers "
                "ignore the class."),
    ProcessKnob("server.cpus", CpuList(), "CPUs the server's processes may run on.", _CPUS),
    ProcessKnob("server.memory", Size(), "RAM the server's processes may hold, their page cache included (a "
                "memory cgroup's limit).", _MEMORY, _MEMORY_RISK),
    ProcessKnob("client.nice", Integer(-20, 19), "Scheduling priority of Maximus's terminals and loaders.", _NICE),
    ProcessKnob("client.cpus", CpuList(), "CPUs Maximus's terminals and loaders may run on.", _CPUS),
    ProcessKnob("client.memory", Size(), "RAM Maximus's terminals and loaders may hold, their page cache included "
                "(an embedded engine's database I/O is theirs).", _MEMORY, _MEMORY_RISK),
)
PROCESS = {knob.name: knob for knob in PROCESS_KNOBS}
MEMORY_KNOBS = frozenset({"server.memory", "client.memory"})  # a cgroup each (``kinds.MemoryLimit``), not scheduling


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants now."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        try:
            pending.extend(processes.children_of(current))
        except OSError:
            pass  # it ended meanwhile
    return found


def server_knobs(settings: Mapping[str, str]) -> dict[str, str]:
    """The server's scheduling knobs among ``settings``."""
    return scheduling_knobs(settings, "server")


def scheduling_knobs(settings: Mapping[str, str], side: str) -> dict[str, str]:
    """The ``side``'s (server or client) knobs that set how its processes are scheduled: all but its memory."""
    return {name: value for name, value in settings.items()
            if name.startswith(f"{side}.") and name not in MEMORY_KNOBS}


def apply_to_server(settings: Mapping[str, str], main_pid: int | None) -> None:
    """The ``server.*`` knobs on a server's main process and its children; they inherit them from then on."""
    chosen = {PROCESS[name].setting: value for name, value in server_knobs(settings).items()}
    if chosen and main_pid is not None:
        _apply(chosen, tree(main_pid))


def _apply(chosen: Mapping[str, str], pids: list[int]) -> None:
    for pid in pids:
        try:
            if "nice" in chosen:
                os.setpriority(os.PRIO_PROCESS, pid, int(chosen["nice"]))
            if "cpus" in chosen:
                os.sched_setaffinity(pid, cpu_set(chosen["cpus"]))
        except ProcessLookupError:
            continue  # it ended meanwhile
    if "ionice" in chosen:
        _ionice(chosen["ionice"], pids)


def _ionice(klass: str, pids: list[int]) -> None:
    command = ["ionice", "-c", _IONICE_CLASSES[klass], *(["-n", "4"] if klass != "idle" else []), "-p",
               *map(str, pids)]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise EngineError("server.ionice needs util-linux's ionice command") from None
    except subprocess.CalledProcessError as error:
        if all(os.path.exists(f"/proc/{pid}") for pid in pids):  # not a process that ended meanwhile
            raise EngineError(f"ionice failed: {error.stderr.strip()}") from None


def io_class(pid: int) -> str:
    """The I/O scheduling class of ``pid`` as ionice names it (``best-effort``, ``idle``, ``none``)."""
    text = subprocess.run(["ionice", "-p", str(pid)], check=True, capture_output=True, text=True).stdout
    return text.split(":")[0].strip()


def scheduling(pid: int) -> dict[str, str]:
    """How ``pid`` is scheduled now: its nice value and CPUs, recorded with the run."""
    return {"nice": str(os.getpriority(os.PRIO_PROCESS, pid)), "cpus": cpu_text(os.sched_getaffinity(pid))}


def schedules(server_pid: int | None) -> dict[str, dict[str, str]]:
    """How the client (this process, whose terminals inherit it) and the server's main process are scheduled; a
    server gone meanwhile is the run's watch's to report, not this record's."""
    scheduled = {"client": scheduling(os.getpid())}
    try:
        scheduled |= {"server": scheduling(server_pid)} if server_pid else {}
    except ProcessLookupError:
        pass
    return scheduled


@contextmanager
def client_applied(settings: Mapping[str, str]) -> Iterator[None]:
    """The ``client.*`` knobs on this process for the block (the terminals and loaders it starts inherit them),
    put back after it."""
    chosen = {PROCESS[name].setting: value for name, value in scheduling_knobs(settings, "client").items()}
    if not chosen:
        yield
        return
    before = {"nice": str(os.getpriority(os.PRIO_PROCESS, 0)), "cpus": cpu_text(os.sched_getaffinity(0))}
    _apply(chosen, [os.getpid()])
    try:
        yield
    finally:
        _apply({setting: before[setting] for setting in chosen}, [os.getpid()])
