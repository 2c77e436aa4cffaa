"""A database on a server of the user's (``--dsn``) stays where that server keeps it: a storage layout, a throttle or
a server process knob would change something no database of the run uses, and label its results with it (issue 44,
item 7: runs stored with ``Storage: xfs … /dev/loop0`` while the data stayed on the user's disk). Each is refused in
one line, exit 2, before anything is made, mounted, attached or stored."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from maximus.engines.postgres import PostgresEngine
from maximus.system.journal import JOURNAL_VARIABLE

from .inputs_helpers import maximus, one_line_error

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="layouts and throttles are made as root (CI is root)")

REFUSED = {
    "storage.filesystem=xfs": r"^error: storage.filesystem: postgres runs on a server of yours \(--dsn\), whose data "
                              r"stays where it keeps it: a file system Maximus made would hold no database; put your "
                              r"server's data on the file system to measure yourself, or let Maximus manage a server$",
    "storage.write_iops=100": r"^error: storage.write_iops: postgres runs no server process of Maximus's here \(a "
                              r"server of yours\): throttle it yourself, or let Maximus manage one$",
    "server.nice=5": r"^error: server.nice: postgres runs no server process of Maximus's here \(an embedded engine, "
                     r"or a server of yours\): use the client.\* knobs$",
}


@pytest.fixture(scope="module")
def users_server(server_workdir: Path) -> Iterator[str]:
    """The user's own PostgreSQL server (started here as user postgres, as a managed one is), by its DSN."""
    server = PostgresEngine(server_workdir / "users-server-changes", "postgres", {})
    server.start()
    try:
        yield server._dsn("postgres")
    finally:
        server.stop()


def _loop_devices() -> set[str]:
    return {path.parent.parent.name for path in Path("/sys/block").glob("loop*/loop/backing_file")}


def _mounts() -> str:
    return Path("/proc/self/mountinfo").read_text()


@pytest.mark.parametrize("knob", list(REFUSED))
def test_a_change_for_a_server_of_the_users_is_refused_before_anything_is_made(users_server: str, tmp_path: Path,
                                                                               knob: str) -> None:
    work, results, journal = tmp_path / "work", tmp_path / "r.db", tmp_path / "journal.json"
    loops, mounts = _loop_devices(), _mounts()
    result = maximus("run", "-e", "postgres", "--dsn", users_server, "-k", knob, "--allow-system-changes",
                     "--workdir", str(work), "--results", str(results), "--warmup", "0", "-d", "1",
                     env={JOURNAL_VARIABLE: str(journal)})
    one_line_error(result, 2, REFUSED[knob])
    assert not results.exists() and not work.exists() and not journal.exists()  # nothing stored, nothing made
    assert _loop_devices() == loops and _mounts() == mounts
    assert not list(Path("/sys/fs/cgroup/blkio").rglob("maximus-*"))
