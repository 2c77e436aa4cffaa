"""What the fault-injection tests share, as fixtures: the real `maximus` command and its stored runs (the
``harness``), a small file system of the test's own (``small_disk``), a managed PostgreSQL build, and the
check that nothing a command started is left behind."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from maximus import api
from maximus.engines import _process
from maximus.store import ResultsStore
from maximus.records import CheckResult, RunRecord
from maximus.records import TxnSample

from interrupting import default_dispositions  # tests/interrupting.py

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})

MARK = "MAXIMUS_FAULT_TEST"  # in the environment of every process a command of these tests starts


class Harness:
    """One test's commands: each carries the test's mark in its environment, inherited by every process it
    starts (workers; servers, which runuser and pg_ctl start with it), so the test can tell they are gone."""

    def __init__(self, results: Path) -> None:
        self.mark = uuid.uuid4().hex
        self.results = results

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "maximus", *args]

    def environment(self) -> dict[str, str]:
        return {**os.environ, MARK: self.mark, "COLUMNS": "200"}

    def run(self, *args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(*args), capture_output=True, text=True, timeout=timeout,
                              env=self.environment(), cwd=cwd)

    def spawn(self, *args: str, cwd: Path | None = None, own_group: bool = False) -> subprocess.Popen:
        return subprocess.Popen(self.command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.environment(), cwd=cwd, start_new_session=own_group,
                                preexec_fn=default_dispositions)

    @staticmethod
    def finish(process: subprocess.Popen, timeout: float = 120) -> tuple[int, str, str]:
        stdout, stderr = process.communicate(timeout=timeout)
        return process.returncode, stdout, stderr

    @staticmethod
    def one_error(stderr: str) -> str:
        """The one line a failing command writes on stderr: ``error: <cause>``, never a traceback."""
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr
        return lines[0]

    def runs(self) -> list[RunRecord]:
        return self._read(lambda store: store.runs())

    def samples(self, run_id: int) -> list[TxnSample]:
        return self._read(lambda store: store.samples(run_id))

    def consistency(self, run_id: int) -> list[CheckResult]:
        return self._read(lambda store: store.consistency(run_id))

    def _read(self, what: Callable[[ResultsStore], object]):
        if not self.results.exists():
            return []
        store = ResultsStore(self.results)
        try:
            return what(store)
        finally:
            store.close()

    def running_run(self, process: subprocess.Popen, timeout: float = 120) -> RunRecord:
        """The run once ``process`` has stored it as running: its terminals are starting."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            try:
                found = [run for run in self.runs() if run.status.value == "running"]
            except Exception:  # the command is creating the results database
                found = []
            if found:
                return found[-1]
            time.sleep(0.05)
        process.kill()
        raise AssertionError(f"no run started within {timeout} s: {self.finish(process)}")

    def into_window(self, process: subprocess.Popen, seconds: float) -> RunRecord:
        """Wait until the run of ``process`` is about ``seconds`` into its measured window: on a server, once its
        terminals' sessions are open (on a loaded machine that took longer than any fixed wait); on SQLite, whose
        terminals start in a second or so, a second after the run was stored."""
        run = self.running_run(process)
        if not self._sessions_open(run.spec.terminals):
            time.sleep(1.0)
        time.sleep(run.spec.warmup_s + seconds)
        return run

    def _sessions_open(self, count: int, timeout: float = 60) -> bool:
        """Whether ``count`` client sessions of a PostgreSQL server of this test's commands opened: backends of its
        postmaster whose title names their client, "127.0.0.1(port)" or "[local]" (a backend's title overwrites
        the environment the harness marks, so they are found as the postmaster's children). False at once when no
        such server runs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            servers = [pid for pid in self.processes()
                       if _process.command_line(pid).split(" ")[0].endswith("/postgres")]
            if not servers:
                return False
            titles = [_process.command_line(child) for pid in servers for child in _children(pid)]
            clients = [title for title in titles
                       if title.startswith("postgres: ") and ("(" in title or "[local]" in title)]
            if len(clients) >= count:
                return True
            time.sleep(0.05)
        return True

    def processes(self) -> list[int]:
        """Live processes (zombies aside) that this test's commands started, servers run as postgres included."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                marked = f"{MARK}={self.mark}".encode() in (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if marked and _process.alive(int(entry.name)):
                found.append(int(entry.name))
        return found

    def assert_nothing_left(self, *directories: Path) -> None:
        """No worker or server process of the test's commands runs any more (a server's backends take a moment
        to see their postmaster gone), and no partial copy of a database nor a held lock is left in
        ``directories`` (a lock file left by a killed Maximus is allowed: it blocks nobody)."""
        deadline = time.monotonic() + 15
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = self.processes()
        assert not left, [_process.command_line(pid) for pid in left]
        for directory in directories:
            assert not list(Path(directory).rglob("*.partial")), sorted(Path(directory).rglob("*"))
            held = [lock for lock in Path(directory).rglob("*.lock") if _held(lock)]
            assert not held, held


def _held(lock: Path) -> bool:
    with open(lock, "rb") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(file, fcntl.LOCK_UN)
        return False


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    """The test's commands; whatever they leave running is ended by its pid at the end (and fails the test)."""
    harness = Harness(tmp_path / "results.db")
    yield harness
    for pid in harness.processes():
        os.kill(pid, 9)


@pytest.fixture
def sqlite_workdir(built_workdir: Path) -> Iterator[Path]:
    """A private copy of the session's SQLite build, in /var/tmp."""
    path = Path(tempfile.mkdtemp(prefix="maximus-faults-", dir="/var/tmp"))
    shutil.copytree(built_workdir, path / "work")
    yield path / "work"
    shutil.rmtree(path, ignore_errors=True)


class SmallDisks:
    """File systems of a test's own, small enough to fill: tmpfs mounts a managed server's user can traverse."""

    @staticmethod
    def mounted_at(path: Path) -> bool:
        return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())

    @contextmanager
    def mount(self, size_mb: int) -> Iterator[Path]:
        """A tmpfs of ``size_mb`` MiB, unmounted (and checked to be) at the end."""
        path = Path(tempfile.mkdtemp(prefix="maximus-disk-", dir="/var/tmp"))
        try:
            subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(path)],
                           check=True)
            yield path
        finally:
            if self.mounted_at(path):
                subprocess.run(["umount", str(path)], check=True)
            assert not self.mounted_at(path)
            path.rmdir()

    @staticmethod
    def resize(disk: Path, size_mb: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size_mb}m", str(disk)], check=True)

    @staticmethod
    def used_mb(path: Path) -> float:
        stats = os.statvfs(path)
        return (stats.f_blocks - stats.f_bfree) * stats.f_frsize / 2 ** 20


@pytest.fixture
def small_disks() -> SmallDisks:
    """Mounting needs root, as CI runs the tests."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    return SmallDisks()


@pytest.fixture(scope="module")
def postgres_build() -> Iterator[Path]:
    """A work directory whose managed cluster holds a 1-warehouse build, for the module's tests in turn."""
    path = Path(tempfile.mkdtemp(prefix="maximus-faults-pg-", dir="/var/tmp"))
    path.chmod(0o755)
    engine = api.make_engine("postgres", path, ONE_WAREHOUSE, {})
    with api.running(engine):
        api.load_database(engine, ONE_WAREHOUSE, seed=1)
    yield path
    engine.server.stop_leftover()
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def postmaster() -> Callable[[Path], int]:
    """``postmaster(workdir)``: the pid of the managed server running there, once it runs."""
    def find(workdir: Path) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for pid_file in workdir.glob("postgres-*/data/postmaster.pid"):
                try:
                    pid = int(pid_file.read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue
                if _process.alive(pid):
                    return pid
            time.sleep(0.05)
        raise AssertionError(f"no PostgreSQL server running in {workdir}")

    return find


@pytest.fixture(scope="session")
def stop_fast() -> Callable[[Path], None]:
    """``stop_fast(workdir)``: what an operator does, ``pg_ctl stop -m fast`` of the managed server, as its owner."""
    def stop(workdir: Path) -> None:
        data = next(workdir.glob("postgres-*/data"))
        bin_dir = api.make_engine("postgres", workdir, ONE_WAREHOUSE, {}).server.bin_dir
        subprocess.run(_process.as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w",
                                                "stop"]), check=True, capture_output=True)

    return stop


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
