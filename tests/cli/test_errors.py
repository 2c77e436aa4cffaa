"""Bad input ends in one line on stderr, exit code 2, and no traceback (the real `maximus` process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def maximus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("args", "expected"), [
    (["run", "-k", "cache_sise=64MB"], "did you mean cache_size?"),
    (["run", "-k", "journal_mode=wall"], "expected one of delete, truncate, persist, memory, wal, off"),
    (["run", "-k", "page_size=1000"], "power of two"),
    (["run", "-k", "mmap_size=lots"], "bad value 'lots' for knob mmap_size"),
    (["run", "-k", "journal_mode"], "expected NAME=VALUE"),
    (["run", "-k", "cache_size=-2000", "-k", "CACHE_SIZE=-4000"],
     "knob CACHE_SIZE is given twice: cache_size=-2000 and CACHE_SIZE=-4000"),
    (["run", "--terminals", "many"], "--terminals"),
    (["run", "--warehouses", "0"], "--warehouses must be at least 1"),
    (["run", "--engine", "sqlit"], "did you mean sqlite?"),
    (["run", "--mix", "new_order=1,bogus=2"], "bad mix entry 'bogus=2'"),
    (["run", "-k", "locking_mode=exclusive", "--terminals", "2"], "use --terminals 1"),
    (["load", "--warehouses", "-1"], "--warehouses must be at least 1"),
    (["show", "42"], "no run 42"),
    (["show", "forty-two"], "RUN"),
    (["check"], "run `maximus load` first"),
    # PostgreSQL's options on the default engine would run SQLite instead of the server the user named
    (["run", "--dsn", "host=/tmp port=1"], "--dsn is not an option of sqlite: add -e postgres"),
    (["run", "--bin-dir", "/usr/lib/postgresql/15/bin"], "--bin-dir is not an option of sqlite: add -e postgres"),
    (["run", "--allow-restart"], "--allow-restart is not an option of sqlite: add -e postgres"),
    (["load", "--allow-changes"], "--allow-changes is not an option of sqlite: add -e postgres"),
    (["check", "--dsn", "host=/tmp port=1"], "--dsn is not an option of sqlite: add -e postgres"),
    (["frobnicate"], "No such command"),
])
def test_bad_input_is_one_line_with_exit_code_2(args: list[str], expected: str, tmp_path: Path) -> None:
    result = maximus(*args, "--workdir" if args[0] in ("run", "load", "check") else "--results",
                     str(tmp_path / ("work" if args[0] in ("run", "load", "check") else "r.db")), cwd=tmp_path) \
        if args[0] != "frobnicate" else maximus(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and expected in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").glob("*.sqlite"))
