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
    assert fresh.stdout.count("pass") == 12  # on a fresh load all twelve apply, 11 included
    with sqlite3.connect(database) as db:
        db.execute("UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1")
    broken = _check(workdir)
    assert broken.returncode == 4
    assert broken.stderr.strip() == "error: 2 consistency condition(s) failed: 3.3.2.1, 3.3.2.8"
