"""Worker processes die with the parent that spawned them, even one that died while they were still starting: a
Maximus killed outright must not leave terminals hammering the database behind it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = """
import multiprocessing, os, sys, time

def worker():
    time.sleep(float(sys.argv[1]))  # still starting when the parent dies (a terminal imports for a second)
    from maximus.workers import ignore_interrupts
    ignore_interrupts(termination=True)
    time.sleep(120)

if __name__ == "__main__":
    process = multiprocessing.get_context("spawn").Process(target=worker, daemon=True)
    process.start()
    print(process.pid, flush=True)
    time.sleep(float(sys.argv[2]))
    os._exit(0)  # as a SIGKILL would end it: no atexit, no join
"""


def _worker_outlives(tmp_path: Path, starting_s: float, parent_lives_s: float) -> bool:
    script = tmp_path / "parent.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(starting_s), str(parent_lives_s)], capture_output=True,
                          text=True, timeout=60)
    worker = int(done.stdout.split()[0])
    deadline = time.monotonic() + 15 + starting_s
    try:
        while time.monotonic() < deadline:
            if not Path(f"/proc/{worker}").exists() or "Z" in Path(f"/proc/{worker}/stat").read_text().split()[2]:
                return False
            time.sleep(0.1)
        return True
    finally:
        if Path(f"/proc/{worker}").exists():
            os.kill(worker, 9)


def test_a_worker_whose_parent_died_while_it_started_ends_as_it_starts(tmp_path: Path) -> None:
    assert not _worker_outlives(tmp_path, starting_s=2.0, parent_lives_s=0.2)


def test_a_worker_ends_when_its_parent_dies_after_it_started(tmp_path: Path) -> None:
    assert not _worker_outlives(tmp_path, starting_s=0.0, parent_lives_s=3.0)
