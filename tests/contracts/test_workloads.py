"""The Workload contract, checked for every registered workload and for a minimal second one (``kv_workload``),
which then runs through ``maximus run``, ``show`` and ``export`` under its own names."""

from __future__ import annotations

from dataclasses import replace

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kv_workload import KvWorkload
from typer.testing import CliRunner

from maximus import api
from maximus.cli.app import app
from maximus.cli.workload_options import offered, settings_given
from maximus.engines import ENGINES
from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import UserError
from maximus.workloads import WORKLOADS, workload
from maximus.workloads.base import SettingError, Workload

# the registered ones, and the minimal one as a registry line would add it
CANDIDATES = {**WORKLOADS, KvWorkload.name: KvWorkload}
SMALLEST = {"tpcc": {"warehouses": 1}, "tpcb": {"scale": 1, "accounts_per_branch": 1000}, "kv": {"rows": 200},
            "io-random": {"table_mb": 1}, "io-scan": {"table_mb": 1}}
# `maximus` with the minimal workload registered as a registry line would, before the command line is built
KV_MAXIMUS = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from kv_workload import KvWorkload; "
              "from maximus.workloads import WORKLOADS; WORKLOADS['kv'] = KvWorkload; "
              "from maximus.cli.app import main; main()")


@pytest.fixture(params=sorted(CANDIDATES), ids=str)
def chosen(request: pytest.FixtureRequest) -> Workload:
    return CANDIDATES[request.param]()


@pytest.fixture
def kv_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(WORKLOADS, KvWorkload.name, KvWorkload)


def test_every_workload_in_the_minimal_ones_list() -> None:
    assert set(WORKLOADS) <= set(SMALLEST), "give a new workload its smallest settings here"


def test_settings_default_round_trip_and_name_their_keys(chosen: Workload) -> None:
    settings = chosen.settings({})
    assert chosen.settings(settings.to_mapping()) == settings
    assert tuple(settings.to_mapping()) == chosen.setting_names
    with pytest.raises(SettingError) as refused:
        chosen.settings({"no_such_setting": 1})
    assert refused.value.key == "no_such_setting" and isinstance(refused.value, UserError)
    with pytest.raises(AttributeError):  # frozen: a run's settings are what it stored
        setattr(settings, chosen.setting_names[0], None)


def test_the_scale_is_checked_with_its_range(chosen: Workload) -> None:
    key = next(iter(SMALLEST[chosen.name]))
    with pytest.raises(SettingError) as refused:
        chosen.settings({key: 0})
    assert refused.value.key == key and refused.value.limit is not None and refused.value.value == 0
    assert "--scale must be at least 1" in str(refused.value.for_option("--scale"))


def test_the_presentation_names_every_reported_transaction_and_the_headline(chosen: Workload) -> None:
    shown = chosen.presentation(chosen.settings(SMALLEST[chosen.name]))
    assert shown.headline == chosen.headline
    assert tuple(shown.transaction_labels) == chosen.reported_transactions
    assert chosen.headline.transaction in chosen.reported_transactions
    assert chosen.headline.key != chosen.headline.committed_key
    assert shown.benchmark and shown.scale and shown.short_scale and shown.conformance
    assert set(shown.response_time_limits) <= set(chosen.reported_transactions)


def test_the_command_line_settings_are_settings_with_their_type(chosen: Workload) -> None:
    defaults = chosen.settings({}).to_mapping()
    for option in chosen.options:
        assert option.key in chosen.setting_names and option.flag.startswith("--")
        assert isinstance(defaults[option.key], option.type), f"{option.flag} is not of its setting's type"
        assert option.help and not option.help.endswith("."), "the command line adds the default and the full stop"
        assert option.short is None or (option.short.startswith("-") and len(option.short) == 2)
        assert chosen.settings({option.key: defaults[option.key]}) == chosen.settings({})


def test_a_flag_declared_otherwise_by_two_workloads_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    class Twin(KvWorkload):
        name = "twin"
        options = (replace(KvWorkload.options[0], help="another meaning"),)

    monkeypatch.setitem(WORKLOADS, KvWorkload.name, KvWorkload)
    assert "--keys" in [option.setting.flag for option in offered()]
    monkeypatch.setitem(WORKLOADS, Twin.name, Twin)
    with pytest.raises(ValueError, match="--keys is declared by the kv and the twin workloads"):
        offered()


def test_a_flag_declared_alike_by_two_workloads_is_one_option_of_both(monkeypatch: pytest.MonkeyPatch) -> None:
    class Twin(KvWorkload):
        name = "twin"

    monkeypatch.setitem(WORKLOADS, KvWorkload.name, KvWorkload)
    monkeypatch.setitem(WORKLOADS, Twin.name, Twin)
    (keys,) = [option for option in offered() if option.setting.flag == "--keys"]
    assert keys.workloads == ("kv", "twin")
    assert settings_given("twin", [keys], {keys.parameter: 5}) == {"rows": 5}
    with pytest.raises(UserError, match="--keys: not a setting of the tpcc workload"):
        settings_given("tpcc", [keys], {keys.parameter: 5})


def _kv_maximus(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", KV_MAXIMUS, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "200"})


def test_the_command_line_offers_a_registered_workloads_own_options(tmp_path: Path) -> None:
    """The minimal workload's declarations become options of `maximus run` (all) and `load` (those that choose
    the database), beside TPC-C's; each is given to its workload alone, and refused as its own flag."""
    run_help = _kv_maximus("run", "--help", cwd=tmp_path).stdout
    assert all(flag in run_help for flag in ("--keys", "--write-percent", "--warehouses", "--no-keying", "--mix"))
    assert "kv: number of keys, a row each [default: 1000]." in run_help
    load_help = _kv_maximus("load", "--help", cwd=tmp_path).stdout
    assert "--keys" in load_help and "--warehouses" in load_help
    assert "--write-percent" not in load_help and "--mix" not in load_help
    workdir = str(tmp_path / "work")
    loaded = _kv_maximus("load", "--workload", "kv", "--keys", "300", "--workdir", workdir, cwd=tmp_path)
    assert loaded.returncode == 0 and "Loaded 300 rows, 300 rows" in loaded.stdout, loaded.stdout + loaded.stderr
    too_few = _kv_maximus("load", "--workload", "kv", "--keys", "0", "--workdir", workdir, cwd=tmp_path)
    assert too_few.returncode == 2
    assert too_few.stderr == "error: --keys must be at least 1 and at most 1,000,000, got 0\n"  # not --rows
    not_tpccs = _kv_maximus("load", "--keys", "300", "--workdir", workdir, cwd=tmp_path)
    assert (not_tpccs.returncode, not_tpccs.stderr) == (2, "error: --keys: not a setting of the tpcc workload\n")


def test_transactions_are_what_is_reported(chosen: Workload) -> None:
    for engine in ENGINES.values():  # the transactions that write are the same in every dialect
        transactions = chosen.transactions(engine.dialect).values()
        names = {f"deferred_{t.name}" if t.deferred else t.name for t in transactions}
        assert names <= set(chosen.reported_transactions)
        assert chosen.write_transactions() == {f"deferred_{t.name}" if t.deferred else t.name for t in transactions
                                               if not t.read_only}


def test_a_build_reads_back_runs_and_passes_its_checks(chosen: Workload, tmp_path: Path) -> None:
    settings = chosen.settings(SMALLEST[chosen.name])
    engine = SQLiteEngine(tmp_path, chosen.database_name(settings), {})
    loaded = chosen.load(engine, settings, 3, lambda table, rows: None)
    assert loaded.scale == chosen.scale(settings) and loaded.seed == 3
    assert set(loaded.rows) >= set(chosen.expected_rows(settings))
    session = engine.connect()
    try:
        info = chosen.database_info(session, engine.dialect)
        assert info is not None and info.fresh and (info.scale, info.seed) == (loaded.scale, 3)
        assert info.creation_settings == engine.creation_settings()
        run_settings = chosen.run_settings(settings, 5, info, server_side=False)
        emulator = chosen.emulator(run_settings, 0, engine.dialect)
        transaction, inputs = emulator.next()
        assert transaction.name in chosen.transactions(engine.dialect, run_settings)
        assert all(chosen.check(session, True, engine.dialect))
        assert all(result.passed is not False for result in chosen.check(session, True, engine.dialect))
        session.begin()
        chosen.mark_used(session)
        session.commit()
        assert not chosen.database_info(session, engine.dialect).fresh
    finally:
        session.close()


def test_what_is_not_a_build_of_the_workload_reads_back_as_none(chosen: Workload, tmp_path: Path) -> None:
    engine = SQLiteEngine(tmp_path, "empty", {})
    engine.provision()
    session = engine.connect()
    try:
        assert chosen.database_info(session, engine.dialect) is None
    finally:
        session.close()


def test_a_second_workload_runs_end_to_end_under_its_own_names(kv_registered: None, tmp_path: Path) -> None:
    """One registry line: ``maximus run --workload kv`` builds, drives, stores, checks and reports it, and the
    run table, ``show`` and the CSV export name its figures as it does."""
    results, workdir = tmp_path / "results.db", tmp_path / "work"
    ran = CliRunner().invoke(app, ["run", "--workload", "kv", "--terminals", "2", "--warmup", "0.5", "--duration",
                                   "2", "--workdir", str(workdir), "--results", str(results)])
    assert ran.exit_code == 0, ran.output
    assert "reads/min" in ran.output and "tpmC" not in ran.output and "New-Order" not in ran.output
    store = api.open_results(results)
    try:
        (record,) = store.runs()
        report = api.analyse_run(store, record.id)
    finally:
        store.close()
    assert record.spec.workload == "kv" and record.spec.settings == {"rows": 1000, "write_percent": 20}
    assert report.figures.headline > 0 and report.presentation.benchmark == "key-value"
    assert [c.passed for c in report.consistency] == [True]
    assert {t.name for t in report.figures.transactions} == {"read", "write"}
    (band,) = report.validity
    assert (band.name, band.low, band.high, band.clause, band.status) == ("write_share_percent", 10, 30, "kv.2", "ok")
    counts = report.figures.counts
    assert band.value == pytest.approx(100.0 * counts["write"] / (counts["read"] + counts["write"]))
    listed = CliRunner().invoke(app, ["runs", "--results", str(results)])
    assert "kv 1000" in listed.output and "reads/min" in listed.output
    exported = CliRunner().invoke(app, ["export", "--run", str(record.id), "--format", "csv", "--results",
                                        str(results)])
    row = next(csv.DictReader(io.StringIO(exported.output)))
    assert (row["workload"], row["rows"], row["benchmark"]) == ("kv", "1000", "key-value")
    assert int(row["reads_per_min"]) == report.figures.headline and float(row["read_p90_ms"]) > 0
    assert "tpmc" not in row and "warehouses" not in row
    tpcc_option = CliRunner().invoke(app, ["run", "--workload", "kv", "-w", "2", "--workdir", str(workdir),
                                           "--results", str(results)])
    assert isinstance(tpcc_option.exception, UserError)  # `maximus` prints it as one line, exit code 2
    assert str(tpcc_option.exception) == "--warehouses: not a setting of the kv workload"


def test_an_experiment_file_names_the_workload_and_its_own_settings(kv_registered: None, tmp_path: Path) -> None:
    from maximus.experiment.loader import load_experiment

    path = tmp_path / "kv.toml"
    path.write_text('name = "kv"\nclients = [1]\n\n[workload]\nname = "kv"\nrows = 300\nduration = 2\n\n'
                    '[[steps]]\nname = "wal"\nset = { journal_mode = "wal" }\n')
    experiment = load_experiment(path)
    assert experiment.workload.name == "kv" and experiment.workload.settings == {"rows": 300, "write_percent": 20}
    path.write_text(path.read_text().replace("rows = 300", "rows = 0"))
    with pytest.raises(UserError, match=r"kv.toml:6: workload.rows: expected an integer of at least 1"):
        load_experiment(path)
    path.write_text(path.read_text().replace("rows = 0", "rowz = 3"))
    with pytest.raises(UserError, match=r"workload.rowz: unknown key; did you mean rows\?"):
        load_experiment(path)


def test_an_unknown_workload_is_one_line() -> None:
    with pytest.raises(UserError, match=r"unknown workload 'nope' \(available: tpcc, tpcb, io-random, io-scan\)"):
        workload("nope")


def test_a_storage_bound_workload_is_held_against_fio_on_its_device(kv_registered: None, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A workload that declares a device job (kv, read-only) gets fio's matching job measured before its run, on its
    data's file system, stored with it, and ``show`` holds the run against it; the generic code knows no kv."""
    results, workdir = tmp_path / "results.db", tmp_path / "work"
    options = api.BenchmarkOptions(workload="kv", settings={"write_percent": 0}, terminals=2, warmup_s=0.5,
                                   duration_s=2, workdir=workdir, results=results)
    outcome = api.run(options)
    shown = CliRunner().invoke(app, ["show", str(outcome.run_id), "--results", str(results)])
    assert shown.exit_code == 0, shown.output
    assert "Against the device" in shown.output and " of fio" in shown.output
    store = api.open_results(results)
    try:
        limit = store.device_limit(outcome.run_id)
        report = api.analyse_run(store, outcome.run_id)
    finally:
        store.close()
    assert limit is not None and limit.job.pattern == "randread" and limit.job.jobs == 2
    assert limit.job.block_bytes == 4096 and not limit.job.direct  # SQLite's page, buffered
    assert limit.iops > 0 and limit.output["jobs"][0]["read"]["iops"] == limit.iops  # fio's own JSON, kept whole
    assert report.device is not None and report.device.unit == "reads/s"
    assert report.device.ratio.mean == pytest.approx(report.device.database.mean / limit.iops)
    assert report.device.verdict in ("device-bound", "cache-bound", "CPU-bound")
    assert not list(workdir.rglob(".maximus-fio-*"))  # fio's file removed
    without = api.run(replace(options, device_limit=False))
    store = api.open_results(results)
    try:
        assert store.device_limit(without.run_id) is None
    finally:
        store.close()
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError, match=r"^measuring the device's limit needs fio: apt-get install fio \(or "
                                        r"--no-device-limit: the run without the device's limit beside it\)$"):
        api.run(options)
