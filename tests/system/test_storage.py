"""Storage layouts, as root on this machine: each file system made on a device of Maximus's own, read back while it
is in force and removed after; runs and experiments that put SQLite and PostgreSQL on them; throttled devices; a
Maximus killed with a layout mounted and a server on it, after which the next command removes everything. The suite
itself checks at its end that nothing is left mounted or attached (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from maximus import api, environment, system
from maximus.errors import UserError
from maximus.records import RunStatus
from maximus.system.journal import JOURNAL_VARIABLE, mounted_source
from maximus.system.storage import FILE_SYSTEMS, Layout

from interrupting import kill_group  # tests/interrupting.py

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="layouts are made as root (CI is root)")


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A journal of the test's own, so that no other test's command undoes what this one made."""
    path = tmp_path / "system-journal.json"
    monkeypatch.setenv(JOURNAL_VARIABLE, str(path))
    return path


def _attached() -> set[str]:
    return {p.parent.parent.name for p in Path("/sys/block").glob("loop*/loop/backing_file")}


def _ours_left(workdir: Path) -> list[str]:
    """What of a layout is still there: mounts under the work directory, its loop devices, its files."""
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(workdir) in line]
    backed = [p.read_text().strip() for p in Path("/sys/block").glob("loop*/loop/backing_file")]
    return mounts + [b for b in backed if b.startswith(str(workdir))] + [str(p) for p in workdir.glob("storage*")]


def _maximus(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", *args], capture_output=True, text=True, timeout=240)


LAYOUTS = [
    ({"storage.filesystem": "ext4", "storage.block_size": "1024", "storage.mount_options": "noatime,data=writeback"},
     "ext4", {"noatime"}, 1024),
    ({"storage.filesystem": "xfs", "storage.mount_options": "lazytime"}, "xfs", {"lazytime"}, 4096),
    ({"storage.filesystem": "btrfs", "storage.mkfs_options": "--nodesize 8192", "storage.size": "256MB"}, "btrfs",
     {"relatime"}, 4096),
    ({"storage.filesystem": "tmpfs", "storage.size": "64MB", "storage.mount_options": "strictatime"}, "tmpfs",
     set(), 4096),
    ({"storage.filesystem": "ext4", "storage.device": "zram", "storage.size": "128MB"}, "ext4", set(), 4096),
]


def test_a_file_system_is_one_entry_of_one_table() -> None:
    """Adding a file system is one entry of ``storage.FILE_SYSTEMS`` (and its mkfs in scripts/system-packages): the
    knob offers it, mkfs is called as the entry says, and the test below makes each one."""
    offered = system.OS.get("storage.filesystem").type.values
    assert set(offered) == {"workdir", "tmpfs", *FILE_SYSTEMS}
    assert {fstype for _, fstype, _, _ in LAYOUTS} == {"tmpfs", *FILE_SYSTEMS}
    installs = (Path(__file__).resolve().parents[2] / "scripts" / "system-packages").read_text()
    for name, fs in FILE_SYSTEMS.items():
        assert f"mkfs.{name}" in installs or name == "ext4", name  # ext4's mkfs comes with Debian
        layout = Layout.of(system.OS.resolve({"storage.filesystem": name, "storage.block_size": "4096"}))
        command = layout.mkfs_command("/dev/loop9")
        assert command[0] == f"mkfs.{name}" and command[-1] == "/dev/loop9"
        assert [*fs.quiet, *fs.settled] == command[1:1 + len(fs.quiet) + len(fs.settled)]
        assert fs.block_size[0] in command


@pytest.mark.parametrize("knobs, fstype, options, block", LAYOUTS)
def test_each_layout_is_made_as_asked_and_removed_after(journal: Path, tmp_path: Path, knobs: dict, fstype: str,
                                                        options: set, block: int) -> None:
    settings = system.OS.resolve(knobs)
    zram_before = set(os.listdir("/sys/block"))
    with system.placed(settings, tmp_path / "work") as place:
        mount = next(line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()
                     if line.split()[4] == str(place.workdir))
        assert mount[mount.index("-") + 1] == fstype
        assert options <= set(mount[5].split(",")) | set(mount[-1].split(","))  # per mount, or the super block's
        assert place.warnings() == []  # each read back as in force
        assert os.statvfs(place.workdir).f_bsize == block
        assert json.loads(journal.read_text())["changes"]  # journaled before it was made
        assert place.record["filesystem"] == fstype and place.record["created_s"] >= 0
        (place.workdir / "data").write_bytes(b"x" * 4096)
        if place.record["device"] == "loop":  # block.* knobs tune the disk beneath, where the I/O is scheduled
            assert environment.queue_dir(place.workdir) == environment.queue_dir(tmp_path)
    assert not _ours_left(tmp_path / "work") and not (tmp_path / "work").exists()
    assert set(os.listdir("/sys/block")) == zram_before and not journal.exists()


def test_a_bad_layout_is_one_line_and_leaves_nothing(journal: Path, tmp_path: Path) -> None:
    resolve = system.OS.resolve
    for knobs, message in [
        ({"storage.mount_options": "noatime"}, "storage.mount_options: set storage.filesystem too"),
        ({"storage.filesystem": "tmpfs", "storage.block_size": "1024"}, "storage.filesystem=tmpfs is made by no mkfs"),
        ({"storage.filesystem": "tmpfs", "storage.write_iops": "100"}, "and has no device to throttle"),
    ]:
        with pytest.raises(UserError, match=message), system.placed(resolve(knobs), tmp_path / "work"):
            pass
    for outside in ("-L x /dev/vda", "-J device=LABEL=x", "-l logdev=UUID=1234"):  # another device: refused
        with pytest.raises(UserError, match="is not an mkfs option or value"):
            resolve({"storage.mkfs_options": outside})
    with pytest.raises(UserError, match="-d would copy files into the new file system"):
        system.Layout.of(resolve({"storage.filesystem": "ext4", "storage.mkfs_options": "-d files"}))
    with pytest.raises(UserError, match="is not a mount option"):
        resolve({"storage.mount_options": "noatime;rm"})
    # what the kernel or mkfs refuses of the user's options is their input (exit code 2), not a fault of the system
    with pytest.raises(UserError, match=r"^cannot mount ext4 with data=nonsense: .*"):
        with system.placed(resolve({"storage.filesystem": "ext4", "storage.mount_options": "data=nonsense"}),
                           tmp_path / "work"):
            pass
    with pytest.raises(UserError, match=r"^mkfs.ext4 refused the layout \(mkfs.ext4 .*-I 7 /dev/loop\d+\): .*"):
        with system.placed(resolve({"storage.filesystem": "ext4", "storage.mkfs_options": "-I 7"}), tmp_path / "work"):
            pass
    with pytest.raises(UserError, match=r"^cannot mount btrfs with no options \(made by mkfs.btrfs .*65536.*\): .*"):
        with system.placed(resolve({"storage.filesystem": "btrfs", "storage.block_size": "65536"}), tmp_path / "work"):
            pass
    with pytest.raises(UserError, match=r"^storage.mount_options=ro: xfs on .* takes no writes \(Read-only file "
                                        r"system\), and a run writes its database there$"):
        with system.placed(resolve({"storage.filesystem": "xfs", "storage.mount_options": "ro"}), tmp_path / "work"):
            pass
    assert not _ours_left(tmp_path / "work") and not journal.exists()


def test_durability_is_judged_on_the_file_system_named() -> None:
    def warned(knobs: dict) -> list[str]:
        return system.durability_warnings(system.OS.resolve(knobs))

    assert warned({"storage.filesystem": "btrfs", "storage.mount_options": "commit=30"}) == []  # btrfs's default
    assert warned({"storage.filesystem": "ext4", "storage.mount_options": "commit=30"}) == [
        "storage.mount_options=commit=30 weakens durability"]
    assert warned({"storage.filesystem": "ext4", "storage.mkfs_options": "-O ^has_journal"}) == [
        "storage.mkfs_options=-O ^has_journal weakens durability"]
    assert warned({"storage.filesystem": "xfs", "storage.mount_options": "noatime"}) == []


def test_a_work_directory_named_through_a_symlink_or_dotdot_is_unmounted_after(journal: Path, tmp_path: Path) -> None:
    """The kernel lists mounts and backing files by their real paths: Maximus compares them so."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    for named in (tmp_path / "link" / "work", tmp_path / "real" / ".." / "real" / "work"):
        with system.placed(system.OS.resolve({"storage.filesystem": "ext4", "storage.mount_options": "noatime"}),
                           named) as place:
            assert place.workdir.is_relative_to(tmp_path / "real") and place.warnings() == []
        assert not _ours_left(tmp_path / "real") and not list((tmp_path / "real").iterdir()) and not journal.exists()


def test_a_sqlite_run_on_a_throttled_layout_is_slowed_marked_and_leaves_nothing(journal: Path,
                                                                               tmp_path: Path) -> None:
    """Embedded: Maximus's own processes are throttled; synchronous=full syncs each commit, so the device's writes
    per second stay near the limit instead of the thousands this disk takes: what the kernel's own threads write
    (ext4's journal commits, the flusher threads' writeback) is not throttled, and comes on top."""
    results = tmp_path / "results.db"
    knobs = {"storage.filesystem": "ext4", "storage.mount_options": "noatime,data=writeback",
             "storage.write_iops": "150"}
    cgroup_before = Path("/proc/self/cgroup").read_text()
    outcome = api.run_benchmark(api.BenchmarkOptions(knobs=knobs, terminals=2, warmup_s=0.5, duration_s=3,
                                                     workdir=tmp_path / "work", results=results,
                                                     system_changes=True))
    assert outcome.status is RunStatus.COMPLETE
    report = api.report_of_run(results, outcome.run_id)
    record = report.record
    layout = record.environment["layout"]
    assert layout["filesystem"] == "ext4" and layout["throttle"] == {"write_iops_device": "150"}
    assert record.environment["storage"]["fstype"] == "ext4"  # the run's database was on it
    assert "storage.mount_options=noatime,data=writeback weakens durability" in record.warnings
    assert record.spec.knobs["storage.filesystem"] == "ext4"  # a step's variable like any knob
    disk = report.monitoring.figures.disk
    assert disk.device == layout["block_device"].removeprefix("/dev/") and 20 < disk.writes_per_s <= 150 * 1.5
    assert not _ours_left(tmp_path / "work") and not journal.exists()
    assert not list(Path("/sys/fs/cgroup/blkio").rglob("maximus-*"))
    assert Path("/proc/self/cgroup").read_text() == cgroup_before  # moved back where it was


EXPERIMENT = """
name = "file systems"
engine = "{engine}"
clients = {clients}
repeats = 1
system_changes = true

[workload]
warehouses = 1
warmup = 0.5
duration = {duration}

[baseline]
"storage.filesystem" = "ext4"
"storage.mount_options" = "data=ordered"

[[steps]]
name = "xfs noatime"
set = {{ "storage.filesystem" = "xfs", "storage.mount_options" = "noatime", "vm.dirty_background_ratio" = 5 }}
multi = true
"""


@pytest.mark.parametrize("engine, clients", [("sqlite", [1]), ("postgres", [1, 2])])
def test_an_experiment_moves_the_database_onto_ext4_and_xfs(journal: Path, server_workdir: Path, tmp_path: Path,
                                                            engine: str, clients: list[int],
                                                            machine_knobs: None) -> None:
    """Each step's runs share the layout its knobs name (built once, kept between its runs), which goes after the
    last run; each run records the file system it ran on. A run's knob is put back after it, the server on the
    layout stopped by the run as usual, not by the layout's undoing."""
    path = tmp_path / "filesystems.toml"
    path.write_text(EXPERIMENT.format(engine=engine, clients=clients, duration=1.5))
    work, results = server_workdir / f"fs-{engine}", tmp_path / "results.db"
    done = _maximus("experiment", "run", str(path), "--workdir", str(work), "--results", str(results))
    assert done.returncode == 0, done.stderr
    store = api.open_results(results)
    try:
        runs = store.runs()
    finally:
        store.close()
    assert [r.status for r in runs] == [RunStatus.COMPLETE] * 2 * len(clients)
    for run in runs:
        layout, mounted = run.environment["layout"], run.environment["storage"]
        assert mounted["fstype"] == run.spec.knobs["storage.filesystem"] == layout["filesystem"]
        assert run.spec.knobs["storage.mount_options"] in mounted["mount_options"].split(",") + ["data=ordered"]
    by_step = {}
    for run in runs:
        by_step.setdefault(run.spec.knobs["storage.filesystem"], []).append(run)
    for step_runs in by_step.values():  # one layout and one build per step
        assert len({r.environment["layout"]["mount_point"] for r in step_runs}) == 1
        assert sorted(r.loaded_in_run for r in step_runs) == [False] * (len(clients) - 1) + [True]
    assert not _ours_left(work) and not journal.exists()
    assert "failed too" not in done.stdout + done.stderr and "warning" not in done.stderr


def test_a_layout_that_cannot_be_made_stops_the_experiment_before_its_first_run(journal: Path,
                                                                               tmp_path: Path) -> None:
    """Every step's layout is made before the first run: a mount option the kernel refuses is one line and exit
    code 2, before the baseline ran and before the experiment was stored."""
    path = tmp_path / "bad.toml"
    path.write_text(EXPERIMENT.format(engine="sqlite", clients=[1], duration=1).replace(
        '"storage.mount_options" = "noatime", "vm.dirty_background_ratio" = 5', '"storage.mount_options" = "data=no"'
    ).replace("repeats = 1", "repeats = 2"))
    work, results = tmp_path / "work", tmp_path / "results.db"
    done = _maximus("experiment", "run", str(path), "--workdir", str(work), "--results", str(results))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: cannot mount xfs with data=no: ") and done.stderr.count("\n") == 1
    store = api.open_results(results)
    try:
        assert not store.runs() and not store.experiments()
    finally:
        store.close()
    assert not _ours_left(work) and not journal.exists()


def test_after_a_sigkill_the_next_command_stops_the_server_and_removes_the_layout(journal: Path,
                                                                                  server_workdir: Path,
                                                                                  tmp_path: Path,
                                                                                  machine_knobs: None) -> None:
    work, dirty_ratio = server_workdir / "killed", Path("/proc/sys/vm/dirty_ratio").read_text()
    asked = "17" if dirty_ratio.strip() != "17" else "18"
    process = subprocess.Popen([sys.executable, "-m", "maximus", "run", "-e", "postgres", "-k",
                                "storage.filesystem=xfs", "-k", f"vm.dirty_ratio={asked}", "--allow-system-changes",
                                "--warmup", "0", "--duration", "60", "--workdir", str(work), "--results",
                                str(tmp_path / "results.db")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (journal.exists() and '"process"' in journal.read_text()):
            time.sleep(0.2)
    finally:
        kill_group(process.pid)  # whatever happened: the restore below cleans up after it
        process.wait()
    started = [entry for entry in json.loads(journal.read_text())["changes"] if entry["kind"] == "process"]
    assert started, journal.read_text()
    server = started[0]["pid"]
    assert Path(f"/proc/{server}").exists() and _ours_left(work)  # the server runs on, on its mounted layout
    after = _maximus("system", "restore")
    assert after.returncode == 0, after.stderr
    assert f"stopped the server process {server}" in after.stdout
    assert "unmounted " in after.stdout and "detached /dev/loop" in after.stdout
    stat = Path(f"/proc/{server}/stat")
    assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z")  # ended (a zombie nobody reaps)
    assert not _ours_left(work) and not journal.exists()
    assert Path("/proc/sys/vm/dirty_ratio").read_text() == dirty_ratio
    assert mounted_source(work / "storage") is None


SERVER_BEFORE_ITS_PID = """
import os, subprocess, sys, time
from pathlib import Path
from maximus import system
with system.placed(system.OS.resolve({"storage.filesystem": "ext4"}), Path(sys.argv[1])) as place:
    server = subprocess.Popen(["sleep", "300"], cwd=place.workdir)  # started, its pid not yet journaled
    print(server.pid, flush=True)
    time.sleep(300)
"""


def test_a_server_started_before_its_pid_was_journaled_is_stopped_before_the_unmount(journal: Path,
                                                                                      tmp_path: Path) -> None:
    """Killed while a server it started on a layout was still starting: the next command finds the processes that
    work in that file system of Maximus's, ends them, and unmounts it."""
    maker = subprocess.Popen([sys.executable, "-c", SERVER_BEFORE_ITS_PID, str(tmp_path / "work")],
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        server = int(maker.stdout.readline())
    finally:
        maker.kill()  # SIGKILL: its "server" runs on in the file system it mounted
        maker.wait()
    assert Path(f"/proc/{server}").exists() and _ours_left(tmp_path / "work")
    after = _maximus("system", "restore")
    assert after.returncode == 0, after.stderr
    time.sleep(0.2)
    assert not Path(f"/proc/{server}").exists() or "Z" in Path(f"/proc/{server}/stat").read_text().split()[2]
    assert not _ours_left(tmp_path / "work") and not journal.exists()


def test_without_the_opt_in_or_root_no_layout_is_made(journal: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    work, results = tmp_path / "work", tmp_path / "results.db"
    attached = _attached()
    refused = _maximus("run", "-k", "storage.filesystem=xfs", "--workdir", str(work), "--results", str(results))
    assert refused.returncode == 2
    assert refused.stderr == ("error: storage.filesystem: Maximus changes the operating system only when allowed: "
                              "add --allow-system-changes (system_changes = true in an experiment file)\n")
    monkeypatch.setattr("maximus.system.changes.os.geteuid", lambda: 1000)
    with pytest.raises(UserError, match="^storage.filesystem: changing the operating system needs root"):
        api.run_benchmark(api.BenchmarkOptions(knobs={"storage.filesystem": "xfs"}, workdir=work, results=results,
                                               system_changes=True))
    assert not work.exists() and not results.exists() and _attached() == attached and not journal.exists()


def test_every_change_is_checked_before_any_is_made(journal: Path, tmp_path: Path) -> None:
    """The layout comes first of the run's changes, the server's scheduling later: refused by its check, the
    server.* knob leaves no layout made before it (system.CHANGES: every check runs before the first stage)."""
    work, results = tmp_path / "work", tmp_path / "results.db"
    attached = _attached()
    refused = _maximus("run", "-k", "storage.filesystem=ext4", "-k", "server.nice=5", "--allow-system-changes",
                       "--workdir", str(work), "--results", str(results))
    assert refused.returncode == 2
    assert refused.stderr == ("error: server.nice: sqlite runs no server process of Maximus's here (an embedded "
                              "engine, or a server of yours): use the client.* knobs\n")
    assert not work.exists() and not results.exists() and _attached() == attached and not journal.exists()


LAYOUT_THEN_SLEEP = """
import sys, time
from pathlib import Path
from maximus import system
with system.placed(system.OS.resolve({"storage.filesystem": "ext4"}), Path(sys.argv[1])) as place:
    print(place.workdir, flush=True)
    time.sleep(300)
"""


def test_a_layout_left_mounted_that_no_journal_knows_is_one_line_not_a_second_mount(journal: Path,
                                                                                     tmp_path: Path) -> None:
    """The journal deleted by hand after a SIGKILL: the next run on the same layout finds its mount point still
    mounted and its backing file still attached, says how to remove them, and mounts nothing over them."""
    work = tmp_path / "work"
    maker = subprocess.Popen([sys.executable, "-c", LAYOUT_THEN_SLEEP, str(work)], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        mount_point = Path(maker.stdout.readline().strip())
    finally:
        maker.kill()
        maker.wait()
    backing = mount_point.with_name(f"{mount_point.name}.img")
    device = subprocess.run(["losetup", "--noheadings", "--output", "NAME", "--associated", str(backing)],
                            capture_output=True, text=True).stdout.split()
    try:
        assert mounted_source(mount_point) and device
        journal.unlink()  # by hand
        again = _maximus("run", "-k", "storage.filesystem=ext4", "--allow-system-changes", "--warmup", "0",
                         "--duration", "1", "--workdir", str(work), "--results", str(tmp_path / "results.db"))
        assert again.returncode == 3, again.stderr
        assert again.stderr == (f"error: {mount_point} is still mounted, left by a Maximus whose journal of changes "
                                f"is gone (no `maximus system restore` knows it): remove it by hand (umount "
                                f"{mount_point}; losetup -d {device[0]}; rm {backing}), then run again\n")
        mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(mount_point) in line]
        assert len(mounts) == 1  # nothing mounted over it
        assert not journal.exists()
    finally:
        subprocess.run(["umount", str(mount_point)], capture_output=True)
        for name in device:
            subprocess.run(["losetup", "-d", name], capture_output=True)
        backing.unlink(missing_ok=True)
    assert not [left for left in _ours_left(work) if not left.startswith(str(work / "storage"))]  # its dirs aside
