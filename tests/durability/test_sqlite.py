"""A real database on the power-cut layer, with the losses SQLite documents: in WAL mode synchronous=FULL keeps every
acknowledged commit through any seeded cut and synchronous=OFF loses some within 20 cuts; with the rollback journal
synchronous=EXTRA keeps every one, and synchronous=FULL can roll back its last commit when the journal's unlink was
not durable (the hot journal comes back): the directory entries are what tells these two apart. A writer process
commits one row per transaction and says which it committed; it is killed (SIGKILL, by its pid) before each cut, as
a server is."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from maximus.durability.mount import PowerCutMount

ROWS = 25
WRITER = """
import sqlite3, sys
database, journal, synchronous, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
connection = sqlite3.connect(database, isolation_level=None)
connection.execute(f"PRAGMA journal_mode={journal}")
connection.execute(f"PRAGMA synchronous={synchronous}")
connection.execute("CREATE TABLE IF NOT EXISTS acknowledged (id INTEGER PRIMARY KEY, note TEXT)")
for _ in range(rows):
    connection.execute("BEGIN")
    cursor = connection.execute("INSERT INTO acknowledged (note) VALUES (?)", ("x" * 300,))
    connection.execute("COMMIT")
    print(cursor.lastrowid, flush=True)  # acknowledged: the commit returned
print("done", flush=True)
sys.stdin.readline()  # holds the database open until killed, as a server does
"""


def _commit_then_kill(database: Path, synchronous: str, journal: str = "WAL") -> set[int]:
    """The ids a writer acknowledged; the writer is killed with its database open."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(database), journal, synchronous, str(ROWS)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        lines = [line.strip() for line in iter(writer.stdout.readline, "done\n")]
        assert len(lines) == ROWS, lines
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    return {int(line) for line in lines}


def _rows_after_recovery(database: Path) -> tuple[set[int], str]:
    """The ids the database holds after SQLite's recovery, and its integrity check ("ok"); a database the cut left
    unreadable holds none."""
    try:
        with contextlib.closing(sqlite3.connect(database)) as connection:  # closed: the next cut finds it idle
            ids = {row[0] for row in connection.execute("SELECT id FROM acknowledged")}
            return ids, connection.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.DatabaseError as error:
        return set(), str(error)


def test_wal_with_synchronous_full_keeps_every_acknowledged_commit(layer: PowerCutMount) -> None:
    database, acknowledged = layer.mountpoint / "full.db", set()
    for seed in range(20):
        acknowledged |= _commit_then_kill(database, "FULL")
        report = layer.cut(seed)
        ids, integrity = _rows_after_recovery(database)
        assert integrity == "ok", report.summary()
        assert acknowledged <= ids, f"lost {sorted(acknowledged - ids)}; {report.summary()}"


def test_wal_with_synchronous_off_loses_acknowledged_commits_within_20_cuts(layer: PowerCutMount) -> None:
    for seed in range(20):
        database = layer.mountpoint / f"off-{seed}.db"
        acknowledged = _commit_then_kill(database, "OFF")
        report = layer.cut(seed)
        ids, _ = _rows_after_recovery(database)
        if not acknowledged <= ids:
            assert report.count("dropped", data=True) + report.count("garbled", data=True) > 0
            return
    raise AssertionError("synchronous=OFF lost no acknowledged commit in 20 power cuts")


def test_the_rollback_journal_with_synchronous_extra_keeps_every_acknowledged_commit(layer: PowerCutMount) -> None:
    database, acknowledged = layer.mountpoint / "extra.db", set()
    for seed in range(20):
        acknowledged |= _commit_then_kill(database, "EXTRA", journal="DELETE")
        report = layer.cut(seed)
        ids, integrity = _rows_after_recovery(database)
        assert integrity == "ok", report.summary()
        assert acknowledged <= ids, f"lost {sorted(acknowledged - ids)}; {report.summary()}"


def test_the_rollback_journal_with_synchronous_full_can_roll_back_its_last_commit(layer: PowerCutMount) -> None:
    database, acknowledged = layer.mountpoint / "full.db", set()
    for seed in range(20):
        acknowledged |= _commit_then_kill(database, "FULL", journal="DELETE")
        report = layer.cut(seed)
        ids, integrity = _rows_after_recovery(database)
        assert integrity == "ok", report.summary()
        if not acknowledged <= ids:
            assert acknowledged - ids == {max(acknowledged)}  # the last commit only: the journal's rollback
            assert [entry.fate for entry in report.entries if entry.kind == "unlink"][-1] == "dropped"
            return
    raise AssertionError("the rollback journal with synchronous=FULL lost no commit in 20 power cuts")
