"""Worker processes die with the parent that started them, even one that died while they were still starting: a
Maximus killed outright must not leave terminals hammering the database behind it. Forked from the fork server
(``maximus.workers.context``) or spawned, a worker runs as the process that asked for it: same niceness, CPUs,
cgroups, environment and working directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = """
import multiprocessing, os, sys, time
from maximus import workers

def worker():
    time.sleep(float(sys.argv[1]))  # still starting when the parent dies (a terminal imports for a second)
    workers.ignore_interrupts(termination=True)
    time.sleep(120)

if __name__ == "__main__":
    where = workers.context() if sys.argv[3] == "served" else multiprocessing.get_context("spawn")
    process = workers.start(where, worker, ())
    print(process.pid, flush=True)
    time.sleep(float(sys.argv[2]))
    os._exit(0)  # as a SIGKILL would end it: no atexit, no join
"""


def _worker_outlives(tmp_path: Path, starting_s: float, parent_lives_s: float, where: str) -> bool:
    script = tmp_path / "parent.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(starting_s), str(parent_lives_s), where],
                          capture_output=True, text=True, timeout=60)
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


@pytest.mark.parametrize("where", ["served", "spawned"])
def test_a_worker_whose_parent_died_while_it_started_ends_as_it_starts(tmp_path: Path, where: str) -> None:
    assert not _worker_outlives(tmp_path, starting_s=2.0, parent_lives_s=0.2, where=where)


@pytest.mark.parametrize("where", ["served", "spawned"])
def test_a_worker_ends_when_its_parent_dies_after_it_started(tmp_path: Path, where: str) -> None:
    assert not _worker_outlives(tmp_path, starting_s=0.0, parent_lives_s=3.0, where=where)


INHERITING = """
import json, multiprocessing, os, sys
from pathlib import Path
from maximus import workers

def report(answers):
    answers.put({"parent": os.getppid(), "nice": os.getpriority(os.PRIO_PROCESS, 0),
                 "cpus": sorted(os.sched_getaffinity(0)), "cgroup": Path("/proc/self/cgroup").read_text(),
                 "environment": os.environ.get("MAXIMUS_TEST_MARK"), "directory": os.getcwd()})

def ask():
    where = workers.context()
    answers = where.Queue()
    process = workers.start(where, report, (answers,))
    answer = answers.get(timeout=60)
    process.join()
    return answer

if __name__ == "__main__":
    os.environ["MAXIMUS_TEST_MARK"] = "first"
    seen = [ask()]
    os.environ["MAXIMUS_TEST_MARK"] = "second"
    os.chdir(sys.argv[1])
    seen.append(ask())  # the environment and directory changed: they travel with the worker
    os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 3)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    seen.append(ask())  # as client.nice and client.cpus do: the fork server cannot serve, the worker is spawned
    print(json.dumps({"pid": os.getpid(), "cgroup": Path("/proc/self/cgroup").read_text(),
                      "nice": os.getpriority(os.PRIO_PROCESS, 0), "cpus": sorted(os.sched_getaffinity(0)),
                      "seen": seen}))
"""


def test_a_worker_runs_as_the_process_that_asked_for_it_forked_or_spawned(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(INHERITING)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    parent = json.loads(done.stdout)
    first, second, third = parent["seen"]
    assert first["parent"] == second["parent"] != parent["pid"]  # both forked from the one fork server
    assert (first["environment"], second["environment"]) == ("first", "second")
    assert second["directory"] == str(tmp_path) != first["directory"]
    assert first["nice"] == second["nice"] == parent["nice"] - 3 and first["cgroup"] == parent["cgroup"]
    assert third["parent"] == parent["pid"]  # spawned
    assert (third["nice"], third["cpus"], third["cgroup"]) == (parent["nice"], parent["cpus"], parent["cgroup"])
