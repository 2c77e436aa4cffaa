"""Memory limits, as root on real cgroups (v1 ``memory``): a process held to ``client.memory`` keeps no more of a file
it reads in the page cache than its limit; a managed PostgreSQL server's postmaster and the backends it forks are in
the ``server.memory`` group during the run, which records the limit and what the group saw; every group is gone
after, its processes back where they were, after a SIGKILL of Maximus too; refusals are one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from maximus import api
from maximus.engines import _process
from maximus.engines.postgres import PostgresEngine
from maximus.records import RunStatus
from maximus.system import cgroups, memory
from maximus.system.journal import JOURNAL_VARIABLE, Hold

from interrupting import kill_group  # tests/interrupting.py

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not memory.has_memory(),
                                reason="memory cgroups are made as root (CI is root), on cgroup v1's memory controller")
MB = 2**20
SLACK = MB  # the kernel charges a few pages past the limit before it reclaims (seen: one page)


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A journal of the test's own, so that no other test's command undoes what this one made."""
    path = tmp_path / "system-journal.json"
    monkeypatch.setenv(JOURNAL_VARIABLE, str(path))
    return path


def _ours() -> list[Path]:
    """The memory cgroups a Maximus of this test made, left or not."""
    return list(cgroups.own_group(memory.CONTROLLER).glob("maximus-*"))


def _maximus(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", *args], capture_output=True, text=True, timeout=240)


READER = """
import json, os, sys
from pathlib import Path
from maximus.system import memory
from maximus.system.journal import Hold

path, limit = Path(sys.argv[1]), int(sys.argv[2])
def read_twice():
    for _ in range(2):
        with open(path, "rb") as file:
            while file.read(1 << 20):
                pass
if limit:
    with Hold().journal() as journal, memory.limited("client.memory", limit, os.getpid(), journal, path) as group:
        read_twice()
        print(json.dumps({"usage": group.usage(), "cgroup": Path("/proc/self/cgroup").read_text()}), flush=True)
else:
    memory.drop_cached(path)
    read_twice()
print(json.dumps({"cgroup": Path("/proc/self/cgroup").read_text()}), flush=True)
"""


def _cached_bytes(path: Path) -> int:
    """What of ``path`` is in the page cache now (util-linux's fincore counts its resident pages)."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[0])


def _read_under(path: Path, limit: int) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", READER, str(path), str(limit)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_process_held_to_16mb_caches_no_more_of_a_64mb_file(journal: Path, tmp_path: Path) -> None:
    """The same file read twice, without a limit then under client.memory=16MB: all of it stays cached, then at most
    the limit; the group is gone afterwards and the process back in its own group."""
    data = tmp_path / "table"
    with open(data, "wb") as file:
        for _ in range(64):
            file.write(os.urandom(MB))
    before = Path("/proc/self/cgroup").read_text()  # the child's group is the one it inherits from this process

    _read_under(data, 0)
    unlimited = _cached_bytes(data)
    (limited, after) = _read_under(data, 16 * MB)
    bounded = _cached_bytes(data)

    usage = limited["usage"]
    print(f"cached of the 64 MB file: {unlimited / MB:.1f} MB unbounded, {bounded / MB:.1f} MB under 16 MB "
          f"(the group's cache {usage['cache_bytes'] / MB:.1f} MB, peak {usage['max_usage_bytes'] / MB:.1f} MB)")
    assert unlimited > 60 * MB
    assert bounded <= 16 * MB + SLACK and usage["cache_bytes"] <= 16 * MB
    assert usage["limit_bytes"] == 16 * MB and 8 * MB < usage["max_usage_bytes"] <= 16 * MB + SLACK
    assert usage["oom_kills"] == 0
    assert "maximus-" in limited["cgroup"] and after["cgroup"] == before
    assert not Path(usage["cgroup"]).exists() and not _ours() and not journal.exists()


def test_a_sqlite_run_under_client_memory_records_what_its_group_saw(journal: Path, workdir: Path,
                                                                     tmp_path: Path) -> None:
    """Embedded: Maximus's own process and the terminals it starts are in the group for the load and the run."""
    before, results = Path("/proc/self/cgroup").read_text(), tmp_path / "results.db"
    outcome = api.run_benchmark(api.BenchmarkOptions(engine="sqlite", knobs={"client.memory": "256MB"}, terminals=2,
                                                     warmup_s=0.5, duration_s=1.5, workdir=workdir, results=results,
                                                     system_changes=True))
    assert outcome.status is RunStatus.COMPLETE
    seen = api.report_of_run(results, outcome.run_id).record.environment["memory"]["client"]
    print(f"client.memory=256MB on SQLite: peak {seen['max_usage_bytes'] / MB:.1f} MB, cache at the end "
          f"{seen['cache_bytes'] / MB:.1f} MB, failcnt {seen['failcnt']}")
    assert seen["limit_bytes"] == 256 * MB and 0 < seen["max_usage_bytes"] <= 256 * MB + SLACK
    assert seen["oom_kills"] == 0
    assert Path("/proc/self/cgroup").read_text() == before and not _ours() and not journal.exists()


def test_a_forking_tree_joins_whole_and_its_later_children_are_born_in_the_group(journal: Path) -> None:
    """What the server's limit and the throttle rely on: the main process and its children now move, those it forks
    later are born in the group, and all go back to the parent group when it is removed."""
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                               "kids = [subprocess.Popen(['sleep', '60']) for _ in range(3)]\n"
                               "sys.stdin.readline()\n"
                               "kids.append(subprocess.Popen(['sleep', '60']))\n"
                               "print(kids[-1].pid, flush=True)\n"
                               "sys.stdin.readline()\n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        with Hold().journal() as held, cgroups.made(memory.CONTROLLER, held, "test") as group:
            cgroups.join_tree(group, parent.pid, "test")
            assert len(cgroups.members(group)) == 4
            assert parent.stdin and parent.stdout
            parent.stdin.write("\n")
            parent.stdin.flush()
            later = int(parent.stdout.readline())
            assert later in cgroups.members(group)
        assert not group.exists() and not journal.exists()
        assert f"{memory.CONTROLLER}:/" in Path(f"/proc/{later}/cgroup").read_text()
        assert "maximus-" not in Path(f"/proc/{later}/cgroup").read_text()
    finally:
        for child in subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout.split():
            os.kill(int(child), signal.SIGTERM)
        parent.kill()
        parent.wait()


def _postmaster(workdir: Path) -> int | None:
    for found in workdir.rglob("postmaster.pid"):
        try:
            return int(found.read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue
    return None


def _children(pid: int) -> set[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return {int(child) for child in out.split()}


def _backends(pid: int) -> set[int]:
    """The postmaster's children that serve a client connection (not its checkpointer, writers, launchers)."""
    found = set()
    for child in _children(pid):
        try:
            title = Path(f"/proc/{child}/cmdline").read_text().replace("\0", " ")
        except OSError:
            continue
        if "[local]" in title or "127.0.0.1" in title:
            found.add(child)
    return found


class Membership(threading.Thread):
    """Watches the server's memory group during a run: the postmaster and the backends seen in it."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(daemon=True)
        self.workdir, self.stop = workdir, threading.Event()
        self.postmaster_in, self.backends_in, self.backends_out = False, set(), set()  # type: bool, set, set

    def run(self) -> None:
        while not self.stop.wait(0.1):
            postmaster = _postmaster(self.workdir)
            backends = _backends(postmaster) if postmaster else set()  # before the members: none forked between
            for group in _ours():
                try:
                    members = cgroups.members(group)
                except OSError:
                    continue
                if postmaster in members:
                    self.postmaster_in = True
                    self.backends_in |= backends & members
                    self.backends_out |= {pid for pid in backends - members if Path(f"/proc/{pid}").exists()}


def test_a_postgres_run_under_server_memory_has_its_postmaster_and_backends_in_the_group(
        journal: Path, server_workdir: Path, tmp_path: Path) -> None:
    work, results = server_workdir / "memory", tmp_path / "results.db"
    watch = Membership(work)
    watch.start()
    try:
        outcome = api.run_benchmark(api.BenchmarkOptions(engine="postgres", knobs={"server.memory": "256MB"},
                                                         terminals=2, warmup_s=0.5, duration_s=2, workdir=work,
                                                         results=results, system_changes=True))
    finally:
        watch.stop.set()
        watch.join()
    assert outcome.status is RunStatus.COMPLETE
    assert watch.postmaster_in and len(watch.backends_in) >= 2 and not watch.backends_out
    record = api.report_of_run(results, outcome.run_id).record
    seen = record.environment["memory"]["server"]
    print(f"server.memory=256MB: peak {seen['max_usage_bytes'] / MB:.1f} MB, cache at the end "
          f"{seen['cache_bytes'] / MB:.1f} MB, failcnt {seen['failcnt']}, OOM kills {seen['oom_kills']}")
    assert seen["limit_bytes"] == 256 * MB and 0 < seen["max_usage_bytes"] <= 256 * MB + SLACK
    assert seen["oom_kills"] == 0 and "cache_bytes" in seen and "failcnt" in seen
    assert record.spec.knobs["server.memory"] == str(256 * MB)
    assert not _ours() and not journal.exists()


def test_after_a_sigkill_maximus_system_restore_removes_the_group(journal: Path, server_workdir: Path,
                                                                  tmp_path: Path) -> None:
    work = server_workdir / "memory-killed"
    process = subprocess.Popen([sys.executable, "-m", "maximus", "run", "-e", "postgres", "-k", "server.memory=256MB",
                                "--allow-system-changes", "--warmup", "0", "--duration", "60", "--workdir", str(work),
                                "--results", str(tmp_path / "results.db")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    postmaster = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (_ours() and (postmaster := _postmaster(work))
                                                   and postmaster in cgroups.members(_ours()[0])):
            time.sleep(0.2)
    finally:
        kill_group(process.pid)  # whatever happened: the restore below cleans up after it
        process.wait()
    try:
        (group,) = _ours()
        assert postmaster in cgroups.members(group)
        assert json.loads(journal.read_text())["changes"][-1] == {"kind": "cgroup", "path": str(group)}
        after = _maximus("system", "restore")
        assert after.returncode == 0, after.stderr
        assert f"removed the cgroup {group}" in " ".join(after.stdout.split())  # the console wraps long lines
        assert not _ours() and not journal.exists()
        assert "maximus-" not in Path(f"/proc/{postmaster}/cgroup").read_text()  # the server, back where it was
    finally:
        if postmaster and Path(f"/proc/{postmaster}").exists():  # the server the killed Maximus left running
            os.kill(postmaster, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while Path(f"/proc/{postmaster}").exists() and time.monotonic() < deadline:
                time.sleep(0.2)


@pytest.fixture(scope="module")
def users_server(server_workdir: Path) -> Iterator[str]:
    """The user's own PostgreSQL server (started here as user postgres, as a managed one is), by its DSN."""
    server = PostgresEngine(server_workdir / "users-server-memory", "postgres", {})
    server.start()
    try:
        yield server._dsn("postgres")
    finally:
        server.stop()


def test_refusals_are_one_line(users_server: str, journal: Path, tmp_path: Path) -> None:
    work, results = tmp_path / "work", tmp_path / "results.db"
    common = ("--workdir", str(work), "--results", str(results), "--warmup", "0", "-d", "1")
    refused = {
        ("-e", "postgres", "--dsn", users_server, "-k", "server.memory=256MB", "--allow-system-changes"):
            "error: server.memory: postgres runs no server process of Maximus's here (an embedded engine, or a server "
            "of yours): use client.memory, or bound your server's memory yourself\n",
        ("-k", "server.memory=256MB", "--allow-system-changes"):
            "error: server.memory: sqlite runs no server process of Maximus's here (an embedded engine, or a server of "
            "yours): use client.memory, or bound your server's memory yourself\n",
        ("-k", "client.memory=64MB"):
            "error: client.memory: Maximus changes the operating system only when allowed: add --allow-system-changes "
            "(system_changes = true in an experiment file)\n",
        ("-k", "client.memory=lots", "--allow-system-changes"):
            "error: bad value 'lots' for knob client.memory: expected a size such as 65536, 64KB, 128MB or 2GB\n",
    }
    for args, line in refused.items():
        done = _maximus("run", *args, *common)
        assert (done.returncode, done.stderr) == (2, line), args
    assert not results.exists() and not journal.exists() and not _ours()


def test_a_limit_too_small_for_the_server_fails_the_run_naming_the_oom_killer(journal: Path, server_workdir: Path,
                                                                             tmp_path: Path) -> None:
    """48 MB holds less than the server's shared buffers as the load fills them: the OOM killer ends a backend, and
    the command ends (not hangs) with the kills named as the cause, in one line."""
    work = server_workdir / "memory-oom"
    try:
        done = _maximus("run", "-e", "postgres", "-k", "server.memory=48MB", "--allow-system-changes", "--warmup", "0",
                        "-d", "2", "--workdir", str(work), "--results", str(tmp_path / "results.db"))
        error = done.stderr.splitlines()[-1]
        assert done.returncode == 3, done.stderr
        assert error.startswith("error: the kernel's OOM killer ended ") and "held to server.memory=48MB" in error
        assert not _ours() and not journal.exists()
        # ended at once, not stopped: a fast stop waited up to 120 s for the crash recovery under the limit
        assert "stopping postgres failed" not in done.stderr
        postmaster = _postmaster(work)
        assert postmaster is None or not _process.alive(postmaster)
    finally:
        postmaster = _postmaster(work)  # a server whose stop failed after the kills: ours to end
        if postmaster and Path(f"/proc/{postmaster}").exists():
            os.kill(postmaster, signal.SIGQUIT)


def test_fio_beside_a_run_joins_the_servers_memory_group(journal: Path, tmp_path: Path) -> None:
    """fio's reads are charged to the group its run's server is held to (maximus.device.measure's ``groups``), so
    they meet the same cache bound as the database's."""
    from maximus.device import measure
    from maximus.records import DeviceJob

    with Hold().journal() as held, cgroups.made("memory", held, "a test") as group:
        cgroups.write(group, "memory.limit_in_bytes", str(64 << 20), "a test")
        limit = measure(DeviceJob("randread", 4096, 1, 16 << 20, False, runtime_s=1.0), tmp_path, [group])
        charged = int((group / "memory.max_usage_in_bytes").read_text())
    assert limit.iops > 0
    assert charged > 1 << 20, f"fio charged {charged} bytes to the group"  # its 16 MB file's pages, at least
    # no advice to the kernel, as the engines give none: read-ahead on, as for their reads (fio's own record of it)
    assert limit.output["jobs"][0]["job options"]["fadvise_hint"] == "0"
    assert not _ours() and not journal.exists()
