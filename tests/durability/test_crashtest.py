"""``maximus crashtest`` end to end on SQLite, and the power-cut layer as a change to the machine: journaled, so that
the next command unmounts it after a SIGKILL of Maximus."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maximus import api
from maximus.durability.mount import FSNAME, mounted
from maximus.records import CrashMode, Verdict
from maximus.system.journal import JOURNAL_VARIABLE

from interrupting import default_dispositions, kill_group  # tests/interrupting.py


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A journal of the test's own, so that no other test's command undoes what this one made."""
    path = tmp_path / "system-journal.json"
    monkeypatch.setenv(JOURNAL_VARIABLE, str(path))
    return path


def _maximus(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", *args], capture_output=True, text=True, timeout=timeout)


def _ours(tmp_path: Path) -> list[str]:
    return [point for point in mounted(FSNAME) if point.startswith(str(tmp_path))]


def test_a_crash_test_prints_and_stores_each_cycle_and_lists_them_again(tmp_path: Path, journal: Path) -> None:
    work, results = tmp_path / "work", tmp_path / "results.db"
    done = _maximus("crashtest", "-e", "sqlite", "-n", "2", "--warmup", "0.5", "--duration", "1", "-k",
                    "journal_mode=wal", "--workdir", str(work), "--results", str(results))
    assert done.returncode == 0, done.stderr
    assert "crash 1/2 (process" in done.stdout and "crash 2/2 (process" in done.stdout
    assert "Stored as crash tests 1..2" in done.stdout
    tests = api.crash_tests(results)
    assert [record.test.verdict for record in tests] == [Verdict.DURABLE, Verdict.DURABLE]  # WAL + FULL
    assert all(record.test.findings.acknowledged > 0 and record.test.recovery_s is not None for record in tests)
    assert tests[0].test.seed == 1 and tests[1].test.seed != 1  # the first cycle's seed is the test's own
    listed = _maximus("crashtests", "--results", str(results))
    assert listed.returncode == 0 and "durable (2 process crashes)" in " ".join(listed.stdout.split())
    exported = _maximus("crashtests", "--results", str(results), "--export", "csv")
    assert exported.returncode == 0 and len(exported.stdout.strip().splitlines()) == 3


@pytest.mark.parametrize("arguments, message", [
    (["--mode", "crash"], "error: --mode must be process or power, got 'crash'\n"),
    (["-n", "0"], "--crashes"),
    (["--workload", "kv"], "error: unknown workload"),
    (["-e", "postgres", "--dsn", "postgresql://127.0.0.1:1/x"], "needs a server Maximus manages"),
    (["--mode", "power", "-k", "storage.filesystem=ext4", "--allow-system-changes"], "a power cut stands for the "
     "disk itself"),
])
def test_what_a_crash_test_cannot_do_is_one_line(tmp_path: Path, journal: Path, arguments: list[str],
                                                 message: str) -> None:
    refused = _maximus("crashtest", *arguments, "--workdir", str(tmp_path / "work"), "--results",
                       str(tmp_path / "results.db"))
    assert refused.returncode == 2 and refused.stdout == ""
    assert message in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert not _ours(tmp_path) and not journal.exists()


def test_after_a_sigkill_the_next_command_unmounts_the_power_cut_layer(tmp_path: Path, journal: Path) -> None:
    work = tmp_path / "work"
    process = subprocess.Popen([sys.executable, "-m", "maximus", "crashtest", "--mode", "power", "--warmup", "60",
                                "--duration", "1", "--workdir", str(work), "--results", str(tmp_path / "results.db")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=default_dispositions)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (journal.exists() and '"process"' in journal.read_text()
                                                   and (work / "power-cut" / "mounted" / "tpcc-1wh.sqlite").exists()):
            time.sleep(0.2)
    finally:
        kill_group(process.pid)  # whatever happened: the restore below cleans up after it
        process.wait()
    entries = json.loads(journal.read_text())["changes"]
    [daemon] = [entry["pid"] for entry in entries if entry["kind"] == "process"]
    [private] = [Path(entry["path"]) for entry in entries if entry.get("contents")]
    assert (private / "control").exists()  # the layer's control socket and log, outside the work directory
    assert _ours(tmp_path) == [str(work / "power-cut" / "mounted")]
    assert Path(f"/proc/{daemon}").exists()  # the layer's file system runs on, in a session of its own
    after = _maximus("system", "restore")
    assert after.returncode == 0, after.stderr
    said = " ".join(after.stdout.split())
    assert f"unmounted {work / 'power-cut' / 'mounted'}" in said
    assert f"stopped the power-cut file system's process {daemon}" in said
    assert not _ours(tmp_path) and not journal.exists()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{daemon}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{daemon}").exists() or "Z" in Path(f"/proc/{daemon}/stat").read_text().split()[2]
    assert (work / "power-cut" / "disk" / "tpcc-1wh.sqlite").exists()  # the disk stays, with its database
    assert not private.exists()


def test_the_layers_journal_entries_are_gone_after_a_crash_test_in_power_mode(tmp_path: Path, journal: Path) -> None:
    results = tmp_path / "results.db"
    ids = api.crash_test(api.CrashTestOptions(api.BenchmarkOptions(workdir=tmp_path / "work", results=results,
                                                                   warmup_s=0.5, duration_s=1.0, terminals=2),
                                              CrashMode.POWER, 1))
    [record] = api.crash_tests(results, ids=ids)
    assert record.test.mode is CrashMode.POWER and record.test.recovery_s is not None
    assert any(note.startswith("power cut seed") for note in record.test.notes)
    assert record.test.environment.get("layout") == {"power_cut": str(tmp_path / "work" / "power-cut" / "disk")}
    assert not _ours(tmp_path) and not journal.exists()


def test_ctrl_c_during_a_power_crash_test_unmounts_the_layer_and_leaves_nothing(tmp_path: Path,
                                                                              journal: Path) -> None:
    work = tmp_path / "work"
    process = subprocess.Popen([sys.executable, "-m", "maximus", "crashtest", "--mode", "power", "--warmup", "60",
                                "--duration", "1", "--workdir", str(work), "--results", str(tmp_path / "results.db")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=default_dispositions)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (_ours(tmp_path) and _terminals_running(process.pid)
                                                   and (work / "power-cut" / "disk" / "tpcc-1wh.sqlite").exists()):
            time.sleep(0.2)
        time.sleep(3)  # the terminals released, writing through the layer: the crash falls 60 s later
        assert _ours(tmp_path) and process.poll() is None
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            kill_group(process.pid)
            process.wait()
    assert process.returncode == 130 and stderr.strip().splitlines()[-1] == "error: interrupted"
    assert not _ours(tmp_path) and not journal.exists()
    deadline = time.monotonic() + 10  # multiprocessing's resource tracker ends when the parent's pipe closes, later
    while _terminals_running(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _terminals_running(process.pid), _session_commands(process.pid)


def _session_commands(pid: int) -> list[str]:
    """What still runs in the crash test's session, for the failure's message."""
    commands = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getsid(int(entry.name)) == pid:
                commands.append((entry / "cmdline").read_text().replace("\0", " "))
        except OSError:
            continue
    return commands


def _terminals_running(pid: int) -> bool:
    """Whether a process of the crash test's session (its terminals, spawned) still runs: a zombie, ended and left to
    init to reap, does not."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(pid):
            try:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if os.getsid(int(entry.name)) == pid and state != "Z":
                    return True
            except (OSError, IndexError):
                continue
    return False
