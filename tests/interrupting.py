"""What a test that interrupts a process sets first: that signal's disposition in the process it signals.

A shell that starts a command in the background (``make test > log &`` in a script, ``nohup``) starts it with
SIGINT and SIGQUIT ignored, and every process started from there inherits that, through fork and exec: a Ctrl-C
sent to Maximus would then do nothing, and the test would measure how its caller was started."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Iterable, Iterator

from maximus.engines import _process

# What the tests send: an interactive shell starts its commands with each at its default.
SENT = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP)


def default_dispositions() -> None:
    """``preexec_fn`` of a process a test will signal: each signal a test sends at its default disposition, as a
    shell at a terminal starts it (Python then turns SIGINT into KeyboardInterrupt, as it does at a terminal)."""
    for signum in SENT:
        signal.signal(signum, signal.SIG_DFL)


@contextlib.contextmanager
def keyboard_interrupts() -> Iterator[None]:
    """In the test's own process: SIGINT raises KeyboardInterrupt in the main thread, then as it was."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def worker_processes(pids: Iterable[int]) -> list[int]:
    """Maximus's worker processes among ``pids``: the interpreters multiprocessing spawned, and the children of its
    fork server (``maximus.workers.context``), which share the server's command line but not its parent. A process
    a worker forks (for a moment, before it runs a command) shares the worker's command line too: it is not one."""
    found = []
    for pid in pids:
        try:
            command, parent = _command(pid), _parent(pid)
            grandparent = _command(_parent(parent))
            spawned = _SPAWNED in command and _SPAWNED not in _command(parent)
            forked = _FORK_SERVER in command and _FORK_SERVER in _command(parent) and _FORK_SERVER not in grandparent
        except OSError:  # gone meanwhile
            continue
        if spawned or forked:
            found.append(pid)
    return found


def _command(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def _parent(pid: int) -> int:
    return _stat_field(pid, PARENT)


def _stat_field(pid: int, field: int) -> int:
    """A number of ``/proc/PID/stat``, counted from the state after the command's ')' (which may hold spaces)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[field])


PARENT, GROUP = 1, 2  # /proc/PID/stat's fields after the state


_SPAWNED = b"spawn_main"
_FORK_SERVER = b"multiprocessing.forkserver"


def remove_semaphores(inodes: set[int]) -> None:
    """The named semaphores among the shared memory files ``inodes`` (``_process.shared_memory``'s) of processes that
    were killed: multiprocessing's queues' and events', which their resource tracker, killed too, would have removed.
    Only those: a Ray worker maps its node's object store too, and that stays the node's."""
    for path in _process.shared_memory_files(inodes):
        if path.name.startswith("sem.mp-"):
            path.unlink(missing_ok=True)


def group_members(group: int) -> list[int]:
    """The processes of a process group."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):  # gone meanwhile
            if _stat_field(int(stat.parent.name), GROUP) == group:
                members.append(int(stat.parent.name))
    return members


def kill_group(group: int) -> None:
    """SIGKILL of a process group (a Maximus command started in a session of its own), and what it leaves behind
    removed once it has ended: the named semaphores of its multiprocessing queues and events, which multiprocessing's
    resource tracker, killed in the same group, would have removed, and the shared memory of a server it ran there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGSTOP)  # held where they are: none makes a semaphore between the look and the kill
    members = group_members(group)
    mapped = _process.shared_memory(members)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    _process.await_ended(members, 30)
    _process.remove_shared_memory(*mapped)
