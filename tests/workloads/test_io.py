"""The io workloads: short runs of io-random and io-scan on each engine pass their check and record the bytes a scan
reads, injected damage fails the check, a bad setting is one line, each engine's way of reading gives its fio job,
and a skewed draw is skewed."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maximus import api
from maximus.cli.app import app
from maximus.driver.scheduler import DriveSpec, Run
from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import UserError
from maximus.records import DeviceJob, RunStatus, StorageAccess
from maximus.workloads.base import DatabaseInfo, SettingError
from maximus.workloads.io import IoRandom, IoScan
from maximus.workloads.io.emulator import IoRunSettings, RandomEmulator, RowDrawer
from maximus.workloads.io.loader import IoBuild
from maximus.workloads.tpcb import Tpcb
from maximus.workloads.io.settings import Skew, parse_skew

SMALL = {"table_mb": 2, "row_bytes": 100}
ROWS = 2 * (1 << 20) // 100  # 20,971


def _run(engine: str, workload: str, workdir: Path, results: Path, **settings: object) -> api.RunOutcome:
    options = api.BenchmarkOptions(engine=engine, workload=workload, settings={**SMALL, **settings}, terminals=3,
                                   warmup_s=0.3, duration_s=1.5, workdir=workdir, results=results, monitor=False,
                                   device_limit=False)
    return api.run_benchmark(options)


def _run_both_and_check(engine: str, workdir: Path, results: Path) -> None:
    """io-random then io-scan on the same build (their settings choose the same database)."""
    for workload, settings in (("io-random", {"skew": "hot=10%:90%"}), ("io-scan", {})):
        outcome = _run(engine, workload, workdir, results, **settings)
        assert outcome.status is RunStatus.COMPLETE
        assert [(r.clause, r.passed) for r in outcome.consistency if r.clause == "io"] == [("io", True)] * 2
        store = api.open_results(results)
        try:
            report = api.analyse_run(store, outcome.run_id)
            record = store.run(outcome.run_id)
        finally:
            store.close()
        assert record.spec.workload == workload and report.figures.headline > 0
        assert report.figures.outcomes["failed"] == 0
        assert record.constants["rows"] == ROWS and record.constants["row_bytes"] == 100
        assert ROWS * 100 <= record.constants["table_bytes"] <= 3 * ROWS * 100  # the rows, with their overhead


def test_short_runs_on_sqlite_pass_their_check(tmp_path: Path) -> None:
    _run_both_and_check("sqlite", tmp_path / "work", tmp_path / "results.db")


def test_short_runs_on_postgres_pass_their_check(server_workdir: Path, tmp_path: Path) -> None:
    _run_both_and_check("postgres", server_workdir, tmp_path / "results.db")


def test_short_runs_on_mariadb_pass_their_check(server_workdir: Path, tmp_path: Path) -> None:
    _run_both_and_check("mariadb", server_workdir, tmp_path / "results.db")


def test_busy_readers_share_a_process_per_core_on_a_server_engine_and_scanners_get_their_own(tmp_path: Path) -> None:
    """io-random's read is one call, which a server engine's pump sends for the readers sharing a process; a scan's
    client drops the caches before each call with cold caches, so scanners keep a process each, as an embedded
    engine's readers do (their reads are this process's own work)."""
    info = DatabaseInfo(2, 1, 1.0, True, {}, IoBuild(2, 100, ROWS, ROWS * 100))
    cores = os.cpu_count() or 1
    reads = IoRandom().run_settings(IoRandom().settings(SMALL), 1, info, False)
    scans = IoScan().run_settings(IoScan().settings(SMALL), 1, info, False)
    for engine_name in ("postgres", "mariadb"):
        engine = api.make_engine(engine_name, tmp_path, api.Build.of("io-random", SMALL), {})
        assert api.terminal_hosting(engine, reads, 16) == ("multiplexed", -(-16 // min(16, cores))), engine_name
        assert api.terminal_hosting(engine, scans, 2) == ("process", 1), engine_name
    sqlite = api.make_engine("sqlite", tmp_path, api.Build.of("io-random", SMALL), {})
    assert api.terminal_hosting(sqlite, reads, 16) == ("process", 1)


@pytest.fixture
def built(tmp_path: Path) -> SQLiteEngine:
    workload = IoRandom()
    settings = workload.settings(SMALL)
    engine = SQLiteEngine(tmp_path, workload.database_name(settings), {})
    workload.load(engine, settings, 1, lambda table, rows: None)
    return engine


@pytest.mark.parametrize("damage, detail", [
    ("DELETE FROM io_rows WHERE id = 9", {1: f"{ROWS - 1:,} rows, {ROWS:,} loaded",
                                         2: f"{ROWS - 1:,} distinct ids from 1 to {ROWS}, expected 1 to {ROWS:,}"}),
    (f"UPDATE io_rows SET id = {ROWS + 5} WHERE id = 3",
     {2: f"{ROWS:,} distinct ids from 1 to {ROWS + 5}, expected 1 to {ROWS:,}"}),
])
def test_a_fresh_build_passes_and_injected_damage_fails(built: SQLiteEngine, damage: str,
                                                        detail: dict[int, str]) -> None:
    session = built.connect()
    try:
        assert [r.passed for r in IoScan().check(session, True, built.dialect)] == [True, True]
        session.begin()
        session.execute(damage)
        session.commit()
        results = IoScan().check(session, False, built.dialect)
    finally:
        session.close()
    assert {r.condition: r.detail for r in results if not r.passed} == detail


def test_one_build_serves_both_workloads_and_a_scan_reads_every_row(built: SQLiteEngine) -> None:
    random_settings, scan_settings = IoRandom().settings(SMALL), IoScan().settings(SMALL)
    assert IoRandom().database_name(random_settings) == IoScan().database_name(scan_settings) == "io-2mb-100b"
    assert IoScan().database_name(IoScan().settings({"table_mb": 8})) == "io-8mb"
    session = built.connect()
    try:
        info = IoScan().database_info(session, built.dialect)
        assert info is not None and info.scale == 2 and info.inputs.rows == ROWS
        scan = IoScan().transactions(built.dialect)["scan_table"]
        assert scan.execute(session, None) == (ROWS, ROWS * 92)  # every payload whole: 100 - 8 bytes of id
        read = IoRandom().transactions(built.dialect)["read_row"]
        assert read.execute(session, ROWS) == 92
        with pytest.raises(LookupError, match=f"no row {ROWS + 1} in io_rows"):
            read.execute(session, ROWS + 1)
    finally:
        session.close()


@pytest.mark.parametrize("workload, given, message", [
    (IoRandom, {"table_mb": 0}, "table_mb: expected an integer of at least 1 and at most 1,048,576, got 0"),
    (IoScan, {"row_bytes": 8}, "row_bytes: expected an integer of at least 16 and at most 1,024, got 8"),
    (IoScan, {"table_mbs": 8}, "table_mbs: not a setting of the io-scan workload: did you mean table_mb?"),
    (IoScan, {"skew": "uniform"}, "skew: not a setting of the io-scan workload: its settings are table_mb, "
                                  "row_bytes, caches"),
    (IoRandom, {"skew": "zipf:0.99"}, "skew: expected uniform, or hot=P%:Q% (the first P % of the rows get Q % of "
                                      "the reads), e.g. hot=10%:90%, got 'zipf:0.99'"),
    (IoRandom, {"skew": "hot=0%:90%"}, "skew: both percentages of hot=P%:Q% must lie strictly between 0 and 100, "
                                       "got 'hot=0%:90%'"),
])
def test_a_bad_setting_is_one_line(workload: type, given: dict, message: str) -> None:
    with pytest.raises(SettingError) as refused:
        workload().settings(given)
    assert str(refused.value) == message and "\n" not in message


def test_the_command_line_shares_the_table_options_and_keeps_the_skew_to_io_random(tmp_path: Path) -> None:
    too_small = CliRunner().invoke(app, ["run", "--workload", "io-scan", "--table-mb", "0", "--workdir",
                                         str(tmp_path)])
    assert isinstance(too_small.exception, UserError)
    assert str(too_small.exception) == "--table-mb must be at least 1 and at most 1,048,576, got 0"
    skewed_scan = CliRunner().invoke(app, ["run", "--workload", "io-scan", "--skew", "hot=1%:99%", "--workdir",
                                           str(tmp_path)])
    assert str(skewed_scan.exception) == "--skew: not a setting of the io-scan workload"
    cold_reads = CliRunner().invoke(app, ["run", "--workload", "io-random", "--caches", "cold", "--workdir",
                                          str(tmp_path)])
    assert str(cold_reads.exception) == "--caches: not a setting of the io-random workload"
    lukewarm = CliRunner().invoke(app, ["run", "--workload", "io-scan", "--caches", "lukewarm", "--workdir",
                                        str(tmp_path)])
    assert str(lukewarm.exception) == "--caches: expected warm or cold, got 'lukewarm'"
    loaded = CliRunner().invoke(app, ["load", "--workload", "io-scan", "--table-mb", "1", "--workdir",
                                      str(tmp_path / "work")])
    assert loaded.exit_code == 0, loaded.output
    assert (tmp_path / "work").exists()


def _access(engine: str, knobs: dict[str, str], workdir: Path) -> StorageAccess:
    return api.make_engine(engine, workdir, api.Build.of("io-random", SMALL), knobs).storage_access()


@pytest.mark.parametrize("engine, knobs, page, direct, mapped", [
    ("sqlite", {}, 4096, False, False),
    ("sqlite", {"page_size": "16384", "mmap_size": "1GB"}, 16384, False, True),
    ("postgres", {}, 8192, False, False),
    ("mariadb", {}, 16384, True, False),
    ("mariadb", {"innodb_page_size": "4096", "innodb_flush_method": "fsync"}, 4096, False, False),
])
def test_each_engines_access_gives_its_device_jobs(engine: str, knobs: dict[str, str], page: int, direct: bool,
                                                   mapped: bool, tmp_path: Path) -> None:
    access = _access(engine, knobs, tmp_path)
    data = 3 << 30
    reads = IoRandom().device_job(IoRandom().settings({}), 16, access, data)
    assert reads == DeviceJob("randread", block_bytes=page, jobs=16, file_bytes=data, direct=direct, mapped=mapped,
                              compared_as="operations")
    built = DatabaseInfo(1024, 1, 30.0, True, {}, IoBuild(1024, 200, 5_368_709, 2 << 30))
    scans = IoScan().device_job(IoScan().settings({}), 4, access, data, built)
    assert scans == DeviceJob("read", block_bytes=max(128 << 10, page), jobs=4, file_bytes=data, direct=direct,
                              mapped=mapped, compared_as="bytes", bytes_per_completion=2 << 30)  # the table's
    assert IoScan().device_job(IoScan().settings({}), 4, access, data).bytes_per_completion == data  # no build yet
    small = IoRandom().settings({"table_mb": 8})  # likely cached: its fio is a token second
    assert (reads.runtime_s, IoRandom().device_job(small, 16, access, data).runtime_s) == (10.0, 1.0)


def test_a_64k_page_is_read_whole_by_a_scans_job() -> None:
    scans = IoScan().device_job(IoScan().settings({}), 1, StorageAccess(65536 * 4, direct=True), 1 << 30)
    assert scans.block_bytes == 65536 * 4


def test_a_hot_set_gets_its_share_of_the_reads_and_the_rest_are_uniform() -> None:
    drawer = RowDrawer(10_000, parse_skew("hot=10%:90%"), random.Random(7))
    drawn = [drawer.draw() for _ in range(40_000)]
    assert drawer.hot_rows == 1_000 and min(drawn) >= 1 and max(drawn) <= 10_000
    hot = sum(1 for row in drawn if row <= 1_000) / len(drawn)
    assert hot == pytest.approx(0.9, abs=0.01)  # the binomial's sd is 0.0015
    cold = [row for row in drawn if row > 1_000]
    halves = sum(1 for row in cold if row <= 5_500) / len(cold)  # the cold rows, evenly
    assert halves == pytest.approx(0.5, abs=0.02)


def test_uniform_draws_spread_over_the_whole_table() -> None:
    drawer = RowDrawer(10_000, Skew(), random.Random(7))
    drawn = [drawer.draw() for _ in range(40_000)]
    deciles = [0] * 10
    for row in drawn:
        deciles[(row - 1) // 1_000] += 1
    assert all(share / len(drawn) == pytest.approx(0.1, abs=0.01) for share in deciles)


def test_one_row_is_read_uniformly_and_terminals_repeat_their_draws(built: SQLiteEngine) -> None:
    assert RowDrawer(1, parse_skew("hot=10%:90%"), random.Random(1)).draw() == 1
    settings = IoRunSettings(ROWS, parse_skew("hot=5%:50%"), seed=3)
    first = [row for _, row in RandomEmulator(settings, 2, built.dialect).batch(500)]
    assert first == [row for _, row in RandomEmulator(settings, 2, built.dialect).batch(500)]
    assert first != [row for _, row in RandomEmulator(settings, 3, built.dialect).batch(500)]


def test_a_small_table_is_warned_as_cached() -> None:
    (warning,) = IoRandom().warnings(IoRandom().settings({"table_mb": 16}), 4)
    assert warning == "a 16 MiB table is likely cached (below 64 MiB): the run measures memory, not storage"
    assert IoScan().warnings(IoScan().settings({}), 4) == []
    assert not IoScan().presentation(IoScan().settings({"table_mb": 16})).conforming


def test_a_workload_that_writes_nothing_has_no_writer_gate_on_sqlite(built: SQLiteEngine) -> None:
    """SQLite with a rollback journal queues readers behind writers; with no writer, the readers run side by side."""
    settings = IoRunSettings(ROWS, Skew(), 1)
    assert Run(DriveSpec(built, IoRandom(), settings, 4, 0.0, 1.0)).channels.writer_gate is None
    assert Run(DriveSpec(built, Tpcb(), settings, 4, 0.0, 1.0)).channels.writer_gate is not None


def test_cold_scans_read_the_table_from_the_device_and_warm_ones_from_the_cache(tmp_path: Path) -> None:
    """With cold caches each scan starts with the OS page cache of the database's files dropped: the data device
    reads about the table per scan, where warm scans of the same small table read next to nothing from it."""
    read: dict[str, float] = {}
    for caches in ("warm", "cold"):
        options = api.BenchmarkOptions(engine="sqlite", workload="io-scan", settings={**SMALL, "table_mb": 16,
                                       "caches": caches}, terminals=1, warmup_s=0.5, duration_s=2.0,
                                       workdir=tmp_path / "work", results=tmp_path / "results.db", device_limit=False)
        outcome = api.run_benchmark(options)
        assert outcome.status is RunStatus.COMPLETE
        store = api.open_results(tmp_path / "results.db")
        try:
            report, record = api.analyse_run(store, outcome.run_id), store.run(outcome.run_id)
        finally:
            store.close()
        disk = report.monitoring.figures.disk
        assert disk is not None and report.figures.headline > 0
        scans_per_s = report.figures.headline / 60
        read[caches] = disk.read_mb_per_s * 1e6 / (scans_per_s * record.constants["table_bytes"])  # tables per scan
        assert f"{caches} caches" in report.presentation.scale
    assert read["cold"] > 0.8 and read["warm"] < 0.1, read


def test_cold_scans_need_the_database_files_on_this_machine(tmp_path: Path) -> None:
    info = DatabaseInfo(1, 1, 0.0, True, {}, IoBuild(2, 100, ROWS, ROWS * 100), files=tmp_path / "elsewhere")
    with pytest.raises(UserError, match="not on this machine"):
        IoScan().run_settings(IoScan().settings({"caches": "cold"}), 1, info, False)
    with pytest.raises(SettingError, match="expected warm or cold"):
        IoScan().settings({"caches": "lukewarm"})
