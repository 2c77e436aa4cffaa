"""Shared fixtures: one real 1-warehouse SQLite build per test session, copied where a test needs its own; the two
pumps of an engine with split calls."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from maximus import api, system
from maximus.engines import _process
from maximus.engines.base import Engine
from maximus.engines.pump import Pump, PythonPump

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})
# Test files run side by side (pytest -n), and many change the machine (a memory cgroup, a mount, the power-cut
# layer): through one journal, whose lock one command holds at a time, the second would stop (or wait) for the first.
# Each worker keeps a journal of its own instead, checked at the suite's end as the machine's is; the knobs every
# process shares (sysctls, the I/O scheduler) are serialized by ``machine_knobs``
JOURNALS = Path("/var/tmp/maximus-suite-journals")
os.environ.setdefault("MAXIMUS_SYSTEM_JOURNAL",
                      str(JOURNALS / os.environ.get("PYTEST_XDIST_WORKER", "main") / "system-journal.json"))
_MACHINE_AT_START: dict[str, object] = {}


def _machine() -> dict[str, object]:
    """Every OS knob's value, and the mounts, loop devices, zram devices, blkio cgroups and shared memory there
    are."""
    mounts = [line.partition(" - ")[2].split()[:2] + line.split()[4:5]
              for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return {**system.current_values(Path(tempfile.gettempdir())),
            "mounts": sorted(" ".join(mount) for mount in mounts  # of the kinds Maximus makes
                             if mount[1].startswith(("/dev/loop", "/dev/zram", "maximus-"))),
            "loop devices": sorted(p.parent.parent.name for p in Path("/sys/block").glob("loop*/loop/backing_file")),
            "zram devices": sorted(p.name for p in Path("/sys/block").glob("zram*")),
            "blkio cgroups": sorted(p.name for p in Path("/sys/fs/cgroup/blkio").glob("maximus-*")),
            # a killed server's (PostgreSQL's dynamic segments, its System V one); a killed run's named semaphores
            "shared memory": sorted(name for name in os.listdir("/dev/shm") if not name.startswith(SEMAPHORE)),
            "named semaphores": sorted(name for name in os.listdir("/dev/shm") if name.startswith(SEMAPHORE)),
            "System V segments": sorted(line.split()[1] for line in
                                        Path("/proc/sysvipc/shm").read_text().splitlines()[1:])}


# What only the suite's own leftovers change: others' processes (a run beside the suite) make and remove these too
_LEFT_ONLY = ("shared memory", "System V segments", "named semaphores")
SEMAPHORE = "sem."
# Said, not failed: now and then a suite run leaves one multiprocessing semaphore, from a test not yet found
_SAID_ONLY = ("named semaphores",)


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # the whole run's, not each parallel worker's
        _MACHINE_AT_START.update(_machine())


# The files that take longest, handed out first: `pytest -n 2 --dist loadfile` gives the workers whole files in the
# collection's order, and these, collected near the end, kept one worker busy for minutes after the other had
# finished (the benchmark smokes alone are about four minutes)
LONGEST_FIRST = ("test_bench.py", "test_fresh_install.py")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)  # stable: every other file keeps its place


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After the whole suite no operating-system knob differs from its start, nothing is mounted or attached that
    was not, and Maximus left nothing of its own to put back (no journal of changes)."""
    if hasattr(session.config, "workerinput") or not _MACHINE_AT_START:
        return
    now = _machine()
    changed = {name: (value, now[name]) for name, value in _MACHINE_AT_START.items()
               if (now[name] != value if name not in _LEFT_ONLY else set(now[name]) - set(value))}
    journals = [system.journal.DEFAULT_JOURNAL, *JOURNALS.glob("*/system-journal.json")]
    left = [str(path) for path in journals if path.exists()]
    if not left:
        shutil.rmtree(JOURNALS, ignore_errors=True)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if said := {name: changed.pop(name) for name in _SAID_ONLY if name in changed}:
        reporter.write_line(f"NOTE: the suite left {said}", yellow=True)
    if changed or left:
        reporter.write_line(f"FAILED: the suite left the machine changed: {changed or ''} "
                            f"{'journals ' + ', '.join(left) if left else ''}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def built_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A work directory holding a pristine 1-warehouse TPC-C build (seed 1, default SQLite knobs)."""
    workdir = tmp_path_factory.mktemp("built")
    engine = api.make_engine("sqlite", workdir, ONE_WAREHOUSE, {})
    api.load_database(engine, ONE_WAREHOUSE, seed=1)
    return workdir


@pytest.fixture(scope="session")
def server_workdir() -> Iterator[Path]:
    """A work directory a managed server's unprivileged user can traverse (pytest's own is private)."""
    path = Path(tempfile.mkdtemp(prefix="maximus-test-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def loaded(server_workdir: Path) -> Path:
    """A pristine 1-warehouse PostgreSQL build (seed 1) in the managed cluster of ``server_workdir``."""
    engine = api.make_engine("postgres", server_workdir, ONE_WAREHOUSE, {})
    with api.running(engine):
        api.load_database(engine, ONE_WAREHOUSE, seed=1)
    return server_workdir


@pytest.fixture
def workdir(built_workdir: Path, tmp_path: Path) -> Path:
    """A private copy of the pristine build, so tests can change data freely."""
    target = tmp_path / "work"
    shutil.copytree(built_workdir, target)
    return target


@pytest.fixture(params=["python", "c"])
def make_pump(request: pytest.FixtureRequest) -> Callable[[Engine], Pump]:
    """Every test that takes it runs with the pump in Python and with the engine's own (in C over its client
    library: libpq, libmariadb)."""
    if request.param == "python":
        return lambda engine: PythonPump()
    return lambda engine: engine.call_pump()


# A name in Linux's abstract socket namespace: bound by one process of the machine at a time, and gone with it, so
# the lock leaves no file behind and a killed holder never keeps it
_KNOBS_LOCK = "\0maximus-tests-machine-knobs"


@pytest.fixture
def machine_knobs() -> Iterator[None]:
    """The machine's knobs (and Maximus's cgroups) for this test alone: pytest -n runs test files side by side (and
    two suites may run on one machine), and a test that compares every knob before and after its run, or looks for
    cgroups of Maximus's left behind, would see another file's experiment change one meanwhile."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as lock:
        while True:
            try:
                lock.bind(_KNOBS_LOCK)
                break
            except OSError as error:
                if error.errno != errno.EADDRINUSE:
                    raise
                time.sleep(0.1)
        yield


@pytest.fixture
def kill_server() -> Iterator[Callable[[int], None]]:
    """SIGKILL of a server's main process, as the OOM killer sends it; at the test's end, once the processes under
    it have ended too, the shared memory they had mapped is removed, as the server's next start would have done
    (PostgreSQL's System V and /dev/shm segments): the test's server is never started again."""
    killed: list[tuple[list[int], tuple[set[int], set[int]]]] = []

    def kill(pid: int) -> None:
        family = [pid, *_process.descendants(pid)]
        killed.append((family, _process.shared_memory(family)))
        os.kill(pid, signal.SIGKILL)

    yield kill
    for family, mapped in killed:
        _process.await_ended(family, 30)  # a backend ends when it sees its postmaster gone
        _process.remove_shared_memory(*mapped)
