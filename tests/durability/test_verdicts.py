"""Expected verdicts of crash tests on real engines (issue #42): each configuration is crashed under four busy TPC-C
terminals at 1 warehouse, recovered and verified by ``maximus.crashtest``, and its stored verdict is the documented
one. A loss is made certain, not hoped for: a lossy configuration's power cut drops every pending write (weights
0, 1, 0, 0), and its window is stretched over the whole run where the engine has a knob for it (SQLite's
``wal_autocheckpoint=0``, PostgreSQL's ``wal_writer_delay`` and ``wal_writer_flush_after``). A durable
configuration is cut at the default odds (kept, dropped, torn) for a couple of cycles.

Each engine and mode has a work directory of its own for the module, so its 1-warehouse build (on the power-cut
layer's disk, or the plain one) is made once and restored before each cycle. The mounts are Maximus's own
(``PowerCutLayer``), journaled in a journal of the module's own unless a test changes an operating-system knob, so
that the crash tests of other Maximus processes on the machine do not hold this one's lock; the end of the module
checks that nothing is mounted and no server runs.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from maximus import api, system
from maximus.durability.mount import FSNAME, mounted
from maximus.records import CrashTest, Verdict

pytestmark = [pytest.mark.timeout(240)]

DROP_ALL = (0.0, 1.0, 0.0, 0.0)  # every write not yet synced at the cut is dropped: the worst case of any disk
DEFAULT_WEIGHTS = api.CrashTestOptions(api.BenchmarkOptions()).weights
POWER, PROCESS = api.CrashMode.POWER, api.CrashMode.PROCESS


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    """A directory the servers' own users can traverse, with a journal of the module's own for its mounts."""
    path = Path(tempfile.mkdtemp(prefix="maximus-verdicts-", dir="/var/tmp"))
    path.chmod(0o755)
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("MAXIMUS_SYSTEM_JOURNAL", str(path / "system-journal.json"))
    try:
        yield path
    finally:
        monkeypatch.undo()
        left = [point for point in mounted(FSNAME) if point.startswith(str(path))]
        servers = subprocess.run(["pgrep", "-f", str(path)], capture_output=True, text=True).stdout.split()
        shutil.rmtree(path, ignore_errors=True)
        assert not left, f"left mounted: {left}"
        assert not servers, f"left running: {servers}"


def crash(base: Path, engine: str, mode: api.CrashMode, knobs: dict[str, str] | None = None, crashes: int = 1,
          weights: tuple[float, float, float, float] = DEFAULT_WEIGHTS, warmup_s: float = 0.5,
          duration_s: float = 1.0, seed: int = 1, system_changes: bool = False) -> list[CrashTest]:
    """``crashes`` cycles of ``engine`` with ``knobs``, each crashed between ``warmup_s`` and ``warmup_s +
    duration_s`` after the terminals' release; the stored crash tests, read back."""
    workdir = base / f"{engine}-{mode.value}"
    workdir.mkdir(exist_ok=True)
    workdir.chmod(0o755)
    results = base / "results.db"
    options = api.CrashTestOptions(
        api.BenchmarkOptions(engine=engine, knobs=knobs or {}, terminals=4, warmup_s=warmup_s, duration_s=duration_s,
                             seed=seed, workdir=workdir, results=results, settings={"warehouses": 1},
                             system_changes=system_changes),
        mode, crashes=crashes, weights=weights)
    ids = api.crash_test(options)
    assert len(ids) == crashes
    tests = [record.test for record in api.crash_tests(results, ids=ids)]
    for test in tests:
        assert test.mode is mode and test.findings.acknowledged > 0, explain(test)
        assert warmup_s <= test.crashed_at_s <= warmup_s + duration_s + 0.5, explain(test)  # the kill's moment
    return tests


def explain(test: CrashTest) -> str:
    """What a failed assertion shows of a cycle: its verdict, losses, failed checks and notes."""
    failed = [f"{check.condition} {check.description}: {check.detail}"
              for check in (*test.findings.checks, *test.checks) if check.passed is False]
    return (f"{test.engine} {dict(test.knobs)} {test.mode.value} seed {test.seed}: {test.verdict.value}, "
            f"{len(test.findings.lost)} of {test.findings.acknowledged} lost, failed {failed}, notes {test.notes}")


def assert_durable(tests: list[CrashTest]) -> None:
    for test in tests:
        assert test.verdict is Verdict.DURABLE and not test.findings.lost, explain(test)
        assert test.recovery_s is not None


def assert_lost(tests: list[CrashTest]) -> None:
    """Acknowledged commits missing and the database consistent: every check passed."""
    for test in tests:
        assert test.verdict is Verdict.LOST and test.findings.lost, explain(test)
        assert all(check.passed is not False for check in (*test.findings.checks, *test.checks)), explain(test)


def assert_lost_or_inconsistent(tests: list[CrashTest]) -> None:
    """Never durable; an inconsistent verdict names the checks that failed (or the engine did not come back)."""
    for test in tests:
        assert test.verdict in (Verdict.LOST, Verdict.INCONSISTENT), explain(test)
        if test.verdict is Verdict.INCONSISTENT:
            failed = [check for check in (*test.findings.checks, *test.checks) if check.passed is False]
            assert failed or test.recovery_s is None, explain(test)
            assert all(check.description for check in failed), explain(test)
        else:
            assert test.findings.lost, explain(test)


# -- SQLite -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("knobs", [{"journal_mode": "wal", "synchronous": "full"},
                                   {"journal_mode": "delete", "synchronous": "extra"}],
                         ids=["wal-full", "delete-extra"])
@pytest.mark.parametrize("mode", [PROCESS, POWER], ids=["process", "power"])
def test_sqlite_durable_configurations_keep_every_acknowledged_commit(base: Path, knobs: dict[str, str],
                                                                      mode: api.CrashMode) -> None:
    assert_durable(crash(base, "sqlite", mode, knobs, crashes=2))


def test_sqlite_wal_normal_keeps_everything_on_a_process_crash(base: Path) -> None:
    # the whole run in the WAL, never synced (no checkpoint): a process crash still loses none of it
    assert_durable(crash(base, "sqlite", PROCESS, {"journal_mode": "wal", "synchronous": "normal",
                                                   "wal_autocheckpoint": "0"}))


def test_sqlite_wal_normal_loses_the_commits_since_the_last_checkpoint_on_a_power_cut(base: Path) -> None:
    # no checkpoint during the run: every commit is in the unsynced WAL, and the cut drops it
    [test] = crash(base, "sqlite", POWER, {"journal_mode": "wal", "synchronous": "normal", "wal_autocheckpoint": "0"},
                   weights=DROP_ALL)
    assert_lost([test])
    assert "checkpoint" in test.window


def test_sqlite_synchronous_off_loses_on_a_power_cut(base: Path) -> None:
    tests = crash(base, "sqlite", POWER, {"journal_mode": "delete", "synchronous": "off"}, weights=DROP_ALL)
    assert_lost_or_inconsistent(tests)
    assert "synchronous=off" in tests[0].window


def test_sqlite_delete_full_at_most_rolls_back_its_last_commit(base: Path) -> None:
    """The rollback journal with synchronous=FULL: a dropped unlink of the journal brings it back hot, and the
    recovery rolls back the last acknowledged commit. SQLite has one writer, so a cut can lose at most that one
    commit; it never leaves the database inconsistent."""
    tests = crash(base, "sqlite", POWER, {"journal_mode": "delete", "synchronous": "full"}, crashes=3)
    for test in tests:
        assert test.verdict in (Verdict.DURABLE, Verdict.LOST), explain(test)
        assert len(test.findings.lost) <= 1, explain(test)
        assert "unlink" in test.window


# -- PostgreSQL ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [PROCESS, POWER], ids=["process", "power"])
def test_postgres_defaults_keep_every_acknowledged_commit(base: Path, mode: api.CrashMode) -> None:
    assert_durable(crash(base, "postgres", mode, crashes=2))


@pytest.mark.parametrize("mode", [PROCESS, POWER], ids=["process", "power"])
def test_postgres_asynchronous_commit_loses_acknowledged_commits_and_stays_consistent(base: Path,
                                                                                      mode: api.CrashMode) -> None:
    # The WAL writer flushes every 10 s only, and not after each 1 MB of WAL (wal_writer_flush_after's default, which
    # once left none of 387 commits unflushed at the cut): on a power cut the commits since the last WAL segment the
    # run filled (its end is synced) are in the WAL buffers or the page cache, and dropped. A SIGKILL loses only the
    # WAL not yet written to the OS: the last partial page, which the backends and the WAL writer write out page by
    # page, so a kill can fall where none is pending (seen: 0 of 1,544 lost). It may lose, and it never leaves the
    # database inconsistent.
    knobs = {"synchronous_commit": "off", "wal_writer_delay": "10000", "wal_writer_flush_after": "1GB"}
    tests = crash(base, "postgres", mode, knobs, weights=DROP_ALL)
    if mode is POWER:
        assert_lost(tests)
    else:
        assert all(test.verdict is not Verdict.INCONSISTENT for test in tests), [explain(t) for t in tests]
    assert "synchronous_commit=off" in tests[0].window


def test_postgres_without_fsync_loses_or_is_inconsistent_after_a_power_cut(base: Path) -> None:
    tests = crash(base, "postgres", POWER, {"fsync": "off"}, weights=DROP_ALL)
    assert_lost_or_inconsistent(tests)
    assert "fsync=off" in tests[0].window


def test_aggressive_dirty_page_settings_lose_nothing_while_postgres_syncs_at_commit(base: Path, monkeypatch,
                                                                                     machine_knobs: None) -> None:
    """The layer is the worst case of any dirty-page setting (the kernel may have written nothing back), so the
    machine's settings cannot make a configuration that syncs at commit lose; they are changed, and put back."""
    names = ("vm.dirty_ratio", "vm.dirty_background_ratio", "vm.dirty_expire_centisecs",
             "vm.dirty_writeback_centisecs")
    before = {name: Path("/proc/sys", *name.split(".")).read_text() for name in names}
    monkeypatch.delenv("MAXIMUS_SYSTEM_JOURNAL")  # the machine's own journal: its lock keeps other changes out
    tests = crash(base, "postgres", POWER, {"vm.dirty_ratio": "90", "vm.dirty_background_ratio": "80",
                                            "vm.dirty_expire_centisecs": "60000",
                                            "vm.dirty_writeback_centisecs": "0"},
                  weights=DROP_ALL, system_changes=True)
    assert_durable(tests)
    assert tests[0].knobs["vm.dirty_ratio"] == "90"
    assert {name: Path("/proc/sys", *name.split(".")).read_text() for name in names} == before
    assert not system.journal_path().exists()


# -- MariaDB ------------------------------------------------------------------------------------------------------
#
# MariaDB's restore (DISCARD and IMPORT TABLESPACE on the running server) writes pages its redo log does not cover: a
# crash soon after it took the whole run back (a process crash at innodb_flush_log_at_trx_commit=1, the data back at
# the pristine copy) or left indexes corrupt. A crash test therefore restarts every engine cleanly after its restore
# (crashtest._restored), and these tests hold it to that.


@pytest.mark.parametrize("mode", [PROCESS, POWER], ids=["process", "power"])
def test_mariadb_flushing_the_log_at_each_commit_keeps_every_acknowledged_commit(base: Path,
                                                                                 mode: api.CrashMode) -> None:
    assert_durable(crash(base, "mariadb", mode, {"innodb_flush_log_at_trx_commit": "1"}))


def test_mariadb_writing_the_log_at_each_commit_survives_a_process_crash(base: Path) -> None:
    assert_durable(crash(base, "mariadb", PROCESS, {"innodb_flush_log_at_trx_commit": "2"}))


def test_mariadb_writing_the_log_at_each_commit_loses_on_a_power_cut(base: Path) -> None:
    assert_lost(crash(base, "mariadb", POWER, {"innodb_flush_log_at_trx_commit": "2"}, weights=DROP_ALL))


def test_mariadb_writing_the_log_each_second_loses_on_a_process_crash(base: Path) -> None:
    assert_lost(crash(base, "mariadb", PROCESS, {"innodb_flush_log_at_trx_commit": "0"}))
