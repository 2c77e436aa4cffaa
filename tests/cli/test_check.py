"""`maximus check` on a real database: passes when loaded, fails with the right clause when corrupted."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path


def _check(workdir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", "check", "--workdir", str(workdir)],
                          capture_output=True, text=True, timeout=120)


def test_check_passes_on_a_fresh_load_and_names_the_broken_condition(workdir: Path) -> None:
    database = workdir / "tpcc-1wh.sqlite"
    (workdir / "tpcc-1wh.pristine.sqlite").rename(database)
    fresh = _check(workdir)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    assert fresh.stdout.count("pass") == 13  # on a fresh load all twelve apply, 11 included; and the engine's
    with sqlite3.connect(database) as db:
        db.execute("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
    broken = _check(workdir)
    assert broken.returncode == 4
    assert broken.stderr.strip() == "error: 2 consistency condition(s) failed: 3.3.2.1, 3.3.2.8"


def test_check_runs_the_engines_own_integrity_check(workdir: Path) -> None:
    """A page of an index overwritten on disk breaks no condition of the workload that its queries see, but the
    engine's own check (SQLite's ``PRAGMA integrity_check``) finds it."""
    database = workdir / "tpcc-1wh.sqlite"
    (workdir / "tpcc-1wh.pristine.sqlite").rename(database)
    with sqlite3.connect(database) as db:
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE type = 'index' ORDER BY name").fetchone()
        (page_size,) = db.execute("PRAGMA page_size").fetchone()
    with open(database, "r+b") as file:  # the first index's root page, past its header: zeros
        file.seek((root - 1) * page_size + 16)
        file.write(bytes(page_size - 16))
    broken = _check(workdir)
    assert broken.returncode == 4, broken.stdout + broken.stderr
    assert "PRAGMA integrity_check" in broken.stdout
    assert broken.stderr.strip().startswith("error: ") and broken.stderr.strip().endswith(" engine")
