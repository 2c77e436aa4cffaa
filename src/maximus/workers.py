"""What every worker process Maximus starts (a loader's, a run's terminals) does first, and where it comes from."""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.synchronize
import multiprocessing.util
import os
import signal
import threading
from contextlib import contextmanager, suppress
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

_PR_SET_PDEATHSIG = 1  # prctl(2)
_STOPPING = {signal.SIGINT, signal.SIGTERM}
# What the workers run, imported once by the fork server instead of by every worker (an engine's driver that is not
# installed is skipped), after what holds the server's signals
_PRELOADED = ("maximus.fork_server", "maximus.driver.scheduler", "maximus.driver.crashload",
              "maximus.workloads.tpcc.loader", "maximus.engines", "psycopg", "MySQLdb")
_server_lock = threading.Lock()
_server: tuple[int, tuple] | None = None  # the fork server this module started: its pid, and what it inherited


def context() -> BaseContext:
    """Where the next workers come from. Spawned, each imports Maximus and its engine's driver again: 0.3-0.5 s of
    CPU, which every run paid per worker before its first transaction. Forked from a fork server that imported them
    once (started on first use, ended by multiprocessing when this process ends), each is ready in milliseconds.

    A worker forked from the server inherits the server's scheduling, not this process's: so the server serves only
    while this process has what the server inherited (niceness, CPUs, cgroups, umask). A run under ``client.nice``,
    ``client.cpus`` or ``client.memory`` spawns its workers, which inherit the knobs as they always did. The working
    directory and ``sys.path`` travel with each worker either way, and the environment with ``start``.
    """
    global _server
    inherited = _inheritance()
    with _server_lock:
        forkserver: Any = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
        running = forkserver._forkserver_pid
        if running is not None and (_server is None or _server[0] != running):
            return multiprocessing.get_context("spawn")  # another's server, whose inheritance is unknown
        served = multiprocessing.get_context("forkserver")
        served.set_forkserver_preload(list(_PRELOADED))
        forkserver.ensure_running()  # a server that ended is started again
        if _server is None or _server[0] != forkserver._forkserver_pid:
            _server = (forkserver._forkserver_pid, inherited)
        return served if _server[1] == inherited else multiprocessing.get_context("spawn")


def start(where: BaseContext, target: Callable[..., None], args: Sequence[Any]) -> BaseProcess:
    """A daemon worker running ``target(*args)`` in this process's environment, started."""
    process = where.Process(target=_in_environment, args=(dict(os.environ), target, tuple(args)),  # type: ignore
                            daemon=True)
    process.start()
    return process


def unlink_semaphores(shared: Any) -> None:
    """Take away the names of the semaphores behind ``shared`` (queues, events and locks, in its attributes or
    items) once every worker given them has started: each opened them by name as it read its arguments, and what is
    open stays usable. multiprocessing's resource tracker removes the names of those still named when this process
    ends, but a SIGKILL of the whole process group ends the tracker with it, and /dev/shm kept each sem.mp-*. Best
    effort: it reads multiprocessing's own attributes, and where one is missing the names stay, as before."""
    for lock in _semaphores(shared, depth=3, seen=set()):
        name = getattr(getattr(lock, "_semlock", None), "name", None)
        if not name:
            continue
        registry = getattr(multiprocessing.util, "_finalizer_registry", {})
        for finalizer in [f for f in registry.values() if getattr(f, "_args", None) == (name,)]:
            finalizer.cancel()  # it would take the name again as the lock is collected
        with suppress(FileNotFoundError):
            multiprocessing.synchronize.sem_unlink(name)  # type: ignore[attr-defined]  # _multiprocessing's
        resource_tracker.unregister(name, "semaphore")


def _semaphores(shared: Any, depth: int, seen: set[int]) -> Iterator[Any]:
    if id(shared) in seen:
        return
    seen.add(id(shared))
    if isinstance(shared, multiprocessing.synchronize.SemLock):
        yield shared
    if not depth:
        return
    within = shared if isinstance(shared, (tuple, list)) else vars(shared).values() if hasattr(shared, "__dict__") \
        else ()
    for value in within:
        yield from _semaphores(value, depth - 1, seen)


def _in_environment(environment: dict[str, str], target: Callable[..., None], args: tuple) -> None:
    """A forked worker has the environment its server started with: the caller's, as a spawned worker has it."""
    if dict(os.environ) != environment:
        os.environ.clear()
        os.environ.update(environment)
    target(*args)


def _inheritance() -> tuple:
    """What a child inherits from the calling thread that decides how it is scheduled and held."""
    status = Path("/proc/thread-self/status").read_text()
    umask = next((line for line in status.splitlines() if line.startswith("Umask:")), "")
    return (os.getpriority(os.PRIO_PROCESS, 0), frozenset(os.sched_getaffinity(0)),
            Path("/proc/thread-self/cgroup").read_text(), umask)


def ignore_interrupts(termination: bool = False) -> None:
    """Workers leave Ctrl-C to the parent, which stops them in order (a run keeps their samples) and
    says what happened in one line; a worker's own KeyboardInterrupt would print its traceback.
    ``termination``: SIGTERM too, for workers the parent ends by SIGKILL (a run's terminals, whose
    samples the parent collects when a SIGTERM sent to the whole process group stops the run).

    They also die with the parent: a parent killed outright (SIGKILL) must not leave terminals
    hammering the database, or loaders writing into it, behind it.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if termination:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPPING)  # held since the spawn (``spawning``): a pending
    _die_with_parent()  # Ctrl-C is dropped now that it is ignored


@contextmanager
def spawning() -> Iterator[None]:
    """Ctrl-C and SIGTERM held while worker processes are started. A worker inherits the mask, so one sent to
    the whole process group (a Ctrl-C at the terminal) while it imports its modules waits, and is dropped by
    ``ignore_interrupts``, instead of printing a traceback of the import in every worker; the parent gets
    its own at the end of the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _let_the_fork_server_end() -> None:
    """The fork server lives while a process holds the write end of its pipe: the one that started it, and each
    worker it forked, which multiprocessing gives a copy so that the worker may have workers forked too. Maximus's
    workers have none, and a copy kept would keep the server, and so the worker, alive after the process that
    asked for it was killed."""
    server: Any = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
    if server._forkserver_alive_fd is not None:  # None in a spawned worker
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = None


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies; at once if the parent died already, while this process started
    (a spawned worker imports for a second or more before it gets here), which no signal would ever tell it.

    A forked worker's parent is the fork server, which ends when the process that started it ends, and the worker
    with it. Whether the process that asked for the worker is still there, its ``parent_process`` says either way."""
    _let_the_fork_server_end()
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # this process's symbols, libc's among them: find_library("c")
        # ran ldconfig in a child process of every worker
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the workers end with their parent's work anyway
        return
    parent = multiprocessing.parent_process()
    if parent is not None and not parent.is_alive():
        os._exit(1)
