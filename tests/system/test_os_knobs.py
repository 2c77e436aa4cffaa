"""Operating-system knobs, as root on this machine: each applied, read back and put back; a run and an experiment
that set them; the opt-in and root they need; and a Maximus killed in the middle of a change, after which the next
command puts everything back. The suite itself checks at its end that no knob differs from its start
(tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maximus import api, locks, system
from maximus.cli.app import app
from maximus.errors import UserError
from maximus.records import RunStatus
from maximus.system.journal import JOURNAL_VARIABLE, Hold

from interrupting import kill_group  # tests/interrupting.py

from test_bench import BENCH, runs_in_smoke_mode  # tests/test_bench.py

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="operating-system knobs are changed as root (CI is root)")

# two values for each knob: the test uses the first that differs from the machine's
OTHER_VALUES = {
    "vm.dirty_ratio": ("15", "25"), "vm.dirty_background_ratio": ("5", "8"),
    "vm.dirty_expire_centisecs": ("1500", "2000"), "vm.dirty_writeback_centisecs": ("250", "300"),
    "vm.swappiness": ("10", "20"), "vm.nr_hugepages": ("4", "8"),
    "transparent_hugepage.enabled": ("never", "madvise"), "transparent_hugepage.defrag": ("never", "madvise"),
    "block.scheduler": ("none", "mq-deadline"), "block.read_ahead_kb": ("256", "512"),
    "block.nr_requests": ("64", "128"),
}


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, machine_knobs: None) -> Path:
    """A journal of the test's own, so that no other test's command puts back what this one changes; the machine's
    knobs are the test's alone meanwhile (tests/system/conftest.py)."""
    path = tmp_path / "system-journal.json"
    monkeypatch.setenv(JOURNAL_VARIABLE, str(path))
    return path


def _others(data_path: Path) -> dict[str, str]:
    now = system.current_values(data_path)
    return {name: next(value for value in values if value != now[name]) for name, values in OTHER_VALUES.items()}


def _in_force(asked: dict[str, str], data_path: Path) -> bool:
    now = system.current_values(data_path)
    return all(now[name] == value for name, value in asked.items())


def _maximus(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", *args], capture_output=True, text=True, timeout=240,
                          **kwargs)


def test_every_knob_is_applied_read_back_and_put_back(journal: Path, tmp_path: Path) -> None:
    machine = {knob.name for knob in system.OS if isinstance(knob, system.OsKnob)}
    assert set(OTHER_VALUES) == machine, "give a new machine knob its test values here"
    before = system.current_values(tmp_path)
    assert all(before.values()), before  # this machine offers every knob
    asked = _others(tmp_path)
    with system.applied(asked, tmp_path, allowed=True) as taken_otherwise:
        assert not taken_otherwise
        assert system.current_values(tmp_path) == {**before, **asked}
        assert journal.exists()  # written before the changes, with the values they replaced
    assert system.current_values(tmp_path) == before
    assert not journal.exists()


def test_every_knob_is_taken_by_a_kind_of_change_of_the_one_table() -> None:
    """Adding an OS knob is one entry of its catalogue (docs/extending.md): a kind of change of ``system.CHANGES``
    takes it by its table or prefix, so the run applies it at that kind's stage with no other line."""
    for knob in system.OS:
        assert [kind for _, kind in system.CHANGES if kind({knob.name: "1"})], knob.name  # by name


def test_a_knob_the_kernel_resets_with_another_is_put_back_too(journal: Path, tmp_path: Path) -> None:
    """A new I/O scheduler brings its own queue depth, and so does the old one when it is put back: a depth the
    user had set (64, not the scheduler's default) comes back with block.scheduler."""
    depth = system.OS.get("block.nr_requests").path(tmp_path)
    original = depth.read_text().strip()
    depth.write_text("64")
    try:
        before = system.current_values(tmp_path)
        with system.applied({"block.scheduler": _others(tmp_path)["block.scheduler"]}, tmp_path, allowed=True):
            assert system.current_values(tmp_path)["block.nr_requests"] != "64"  # the kernel's doing
        assert system.current_values(tmp_path) == before
    finally:
        depth.write_text(original)


def test_knobs_are_put_back_when_the_block_fails_and_a_refused_value_is_one_line(journal: Path,
                                                                                  tmp_path: Path) -> None:
    before = system.current_values(tmp_path)
    with pytest.raises(RuntimeError, match="boom"):
        with system.applied({"vm.dirty_ratio": _others(tmp_path)["vm.dirty_ratio"]}, tmp_path, allowed=True):
            raise RuntimeError("boom")
    assert system.current_values(tmp_path) == before and not journal.exists()
    asked = {"vm.dirty_ratio": _others(tmp_path)["vm.dirty_ratio"], "block.nr_requests": "65536"}
    with pytest.raises(UserError, match=r"^the kernel refused block.nr_requests=65536 \(/sys/block/\w+/queue/"
                                        r"nr_requests\): Invalid argument$"):
        with system.applied(asked, tmp_path, allowed=True):
            pass
    assert system.current_values(tmp_path) == before and not journal.exists()  # the one made before is put back


def test_a_run_sets_them_records_every_value_and_puts_them_back(journal: Path, workdir: Path, tmp_path: Path) -> None:
    before = system.current_values(workdir)
    asked = {name: _others(workdir)[name] for name in ("vm.dirty_background_ratio", "transparent_hugepage.enabled",
                                                        "block.read_ahead_kb")}
    knobs = [arg for name, value in asked.items() for arg in ("-k", f"{name}={value}")]
    results = tmp_path / "results.db"
    ran = _maximus("run", "-k", "journal_mode=wal", *knobs, "--allow-system-changes", "--warmup", "0.5", "--duration",
                   "2", "--workdir", str(workdir), "--results", str(results))
    assert ran.returncode == 0, ran.stderr
    assert system.current_values(workdir) == before and not journal.exists()
    store = api.open_results(results)
    try:
        (record,) = store.runs()
    finally:
        store.close()
    assert record.status is RunStatus.COMPLETE
    assert record.spec.knobs == {"journal_mode": "wal", **asked}  # a step's variable, whichever layer it is in
    assert record.environment["os_knobs"] == {**before, **asked}  # every OS knob as it was during the run
    assert record.effective_knobs["journal_mode"] == "wal" and "vm.dirty_background_ratio" not in record.effective_knobs
    shown = _maximus("show", str(record.id), "--results", str(results))
    assert f"block.read_ahead_kb={asked['block.read_ahead_kb']}" in shown.stdout


def test_an_experiment_steps_through_os_knobs_and_needs_the_files_consent(journal: Path, workdir: Path,
                                                                            tmp_path: Path) -> None:
    before = system.current_values(workdir)
    dirty = _others(workdir)["vm.dirty_ratio"]
    path = tmp_path / "os.toml"
    path.write_text(f'name = "os"\nclients = [1]\nrepeats = 1\nsystem_changes = true\n\n[workload]\nduration = 1\n'
                    f'warmup = 0.5\n\n[[steps]]\nname = "dirty"\nset = {{ "vm.dirty_ratio" = {dirty} }}\n')
    results = tmp_path / "results.db"
    ran = _maximus("experiment", "run", str(path), "--workdir", str(workdir), "--results", str(results))
    assert ran.returncode == 0, ran.stderr
    assert f"vm.dirty_ratio the machine's → {dirty}" in ran.stdout
    assert system.current_values(workdir) == before and not journal.exists()
    store = api.open_results(results)
    try:
        baseline, step = store.runs()
    finally:
        store.close()
    assert baseline.environment["os_knobs"]["vm.dirty_ratio"] == before["vm.dirty_ratio"]
    assert step.environment["os_knobs"]["vm.dirty_ratio"] == dirty and step.spec.knobs == {"vm.dirty_ratio": dirty}
    path.write_text(path.read_text().replace("system_changes = true\n", ""))
    refused = _maximus("experiment", "run", str(path), "--workdir", str(workdir), "--results", str(results))
    assert refused.returncode == 2
    assert refused.stderr == ("error: vm.dirty_ratio: Maximus changes the operating system only when allowed: add "
                              "system_changes = true to the experiment file\n")


def test_without_the_opt_in_or_root_nothing_changes(journal: Path, tmp_path: Path) -> None:
    before = system.current_values(tmp_path)
    work, results = tmp_path / "work", tmp_path / "results.db"
    refused = _maximus("run", "-k", "vm.swappiness=10", "--workdir", str(work), "--results", str(results))
    assert refused.returncode == 2
    assert refused.stderr == ("error: vm.swappiness: Maximus changes the operating system only when allowed: add "
                              "--allow-system-changes (system_changes = true in an experiment file)\n")
    with pytest.MonkeyPatch.context() as patched:  # a user who is not root, as the check sees one
        patched.setattr("maximus.system.changes.os.geteuid", lambda: 1000)
        as_user = CliRunner().invoke(app, ["run", "-k", "vm.swappiness=10", "--allow-system-changes", "--workdir",
                                           str(work), "--results", str(results)])
    assert isinstance(as_user.exception, UserError)  # `maximus` prints it as one line, exit code 2
    assert str(as_user.exception) == "vm.swappiness: changing the operating system needs root: run maximus as root"
    typo = _maximus("run", "-k", "vm.swapiness=10", "--workdir", str(work), "--results", str(results))
    assert typo.returncode == 2
    assert typo.stderr == "error: unknown operating-system knob 'vm.swapiness'; did you mean vm.swappiness?\n"
    assert system.current_values(tmp_path) == before and not work.exists() and not results.exists()


def test_after_a_sigkill_the_next_command_puts_everything_back(journal: Path, workdir: Path, tmp_path: Path) -> None:
    before = system.current_values(workdir)
    asked = {name: _others(workdir)[name] for name in ("vm.dirty_expire_centisecs", "block.scheduler")}
    knobs = [arg for name, value in asked.items() for arg in ("-k", f"{name}={value}")]
    results = tmp_path / "results.db"
    for putting_back in (["runs", "--results", str(results)], ["system", "restore"]):
        process = subprocess.Popen([sys.executable, "-m", "maximus", "run", *knobs, "--allow-system-changes",
                                    "--warmup", "0", "--duration", "60", "--workdir", str(workdir), "--results",
                                    str(results)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        deadline = time.monotonic() + 60
        while not _in_force(asked, workdir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _in_force(asked, workdir)
        kill_group(process.pid)
        process.wait()
        assert _in_force(asked, workdir) and journal.exists()
        after = _maximus(*putting_back)
        assert after.returncode == 0, after.stderr
        assert system.current_values(workdir) == before and not journal.exists()
        put_back = (f"put back what a Maximus that did not finish left: block.scheduler={before['block.scheduler']} "
                    f"(was set to {asked['block.scheduler']})")
        assert put_back in after.stdout, after.stdout
        if putting_back == ["system", "restore"]:  # it puts back itself, and says so: not "nothing left"
            assert "Put back " in after.stdout and "Nothing left to put back" not in after.stdout, after.stdout


def test_huge_pages_reserved_by_a_step_serve_postgres_huge_pages_on(journal: Path, server_workdir: Path,
                                                                     tmp_path: Path) -> None:
    """huge_pages=on makes PostgreSQL refuse to start without huge pages: with none reserved the run fails in one
    line; with vm.nr_hugepages reserved by the same run it completes, and the pages are given back after it."""
    before = system.current_values(server_workdir)
    if before["vm.nr_hugepages"] != "0":
        pytest.skip("this machine keeps huge pages reserved: a server could start on them without the step")
    results = tmp_path / "results.db"
    common = ("run", "-e", "postgres", "-k", "huge_pages=on", "-k", "shared_buffers=128MB", "--warmup", "0.5",
              "--duration", "1.5", "--workdir", str(server_workdir), "--results", str(results))
    without = _maximus(*common)
    assert without.returncode == 3, without.stderr
    assert without.stderr.startswith("error: PostgreSQL would not start"), without.stderr
    reserved = _maximus(*common, "-k", "vm.nr_hugepages=200", "--allow-system-changes")
    assert reserved.returncode == 0, reserved.stderr
    assert system.current_values(server_workdir) == before and not journal.exists()
    store = api.open_results(results)
    try:
        run = store.runs()[-1]
    finally:
        store.close()
    assert run.status is RunStatus.COMPLETE and run.environment["os_knobs"]["vm.nr_hugepages"] == "200"
    assert run.engine_settings["huge_pages"] == "on"


def test_the_os_knobs_benchmark_runs_in_smoke_mode(tmp_path: Path) -> None:
    """bench/os_knobs.py changes these knobs too: run here, never beside the tests above (tests/test_bench.py)."""
    runs_in_smoke_mode(BENCH / "os_knobs.py", tmp_path)


def test_a_build_takes_the_machine_and_process_knobs_a_run_takes(journal: Path, tmp_path: Path) -> None:
    """``maximus load`` enters the same changes as a run (system.changed): a kernel setting and the client's
    scheduling during the build, both put back after it."""
    before = system.current_values(tmp_path)
    swappiness = _others(tmp_path)["vm.swappiness"]
    loaded = _maximus("load", "-k", f"vm.swappiness={swappiness}", "-k", "client.nice=3", "--allow-system-changes",
                      "--workdir", str(tmp_path / "work"))
    assert loaded.returncode == 0, loaded.stderr
    assert "Loaded 1 warehouse(s)" in loaded.stdout
    assert system.current_values(tmp_path) == before and not journal.exists()


def test_a_command_that_changes_the_machine_waits_for_another_as_long_as_it_is_told(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    """Another Maximus holds the machine's knobs and storage (its journal): a command stops at once, naming it and
    how to wait, or waits up to ``$MAXIMUS_MACHINE_WAIT`` seconds for it; a value that is not a number of seconds is
    one line."""
    monkeypatch.setenv(JOURNAL_VARIABLE, str(tmp_path / "system-journal.json"))
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom maximus.system.journal import Hold\n"
                               "with Hold().journal():\n    print('held', flush=True)\n    time.sleep(1.5)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setenv("MAXIMUS_MACHINE_WAIT", "0")
        with pytest.raises(locks.Busy, match=rf"in use by Maximus process {holder.pid}: wait for it to finish, or "
                                             r"have this command wait for it with \$MAXIMUS_MACHINE_WAIT=SECONDS"):
            with Hold().journal():
                pass
        monkeypatch.setenv("MAXIMUS_MACHINE_WAIT", "60")
        started = time.monotonic()
        with Hold().journal():
            waited = time.monotonic() - started
            assert holder.poll() is not None or waited > 0  # taken once the holder let go
    finally:
        holder.wait(timeout=30)
    assert 0.5 < waited < 30
    monkeypatch.setenv("MAXIMUS_MACHINE_WAIT", "soon")
    with pytest.raises(UserError, match=r"\$MAXIMUS_MACHINE_WAIT must be"):
        with Hold().journal():
            pass
