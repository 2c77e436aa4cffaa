"""The tpcb workload: short runs on each engine leave the money agreeing, an injected imbalance fails the check, a bad
setting is one line, and its figure is per second (the Headline's period) where TPC-C's is per minute."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from maximus import api
from maximus.analysis.metrics import run_figures
from maximus.cli.app import app
from maximus.engines.sqlite import SQLiteEngine
from maximus.errors import UserError
from maximus.records import Outcome, RunStatus, TxnSample, Window
from maximus.workloads.base import SettingError
from maximus.workloads.tpcb import Tpcb
from maximus.workloads.tpcb.emulator import TpcbEmulator, TpcbRunSettings

SMALL = {"scale": 2, "accounts_per_branch": 500}


def _options(engine: str, workdir: Path, results: Path, **given: object) -> api.BenchmarkOptions:
    return api.BenchmarkOptions(engine=engine, workload="tpcb", settings=SMALL, terminals=3, warmup_s=0.3,
                                duration_s=1.5, workdir=workdir, results=results, monitor=False, **given)


def _passed(outcome: api.RunOutcome) -> dict[int, bool | None]:
    return {r.condition: r.passed for r in outcome.consistency if r.clause == "TPC-B"}


def _run_and_check(engine: str, workdir: Path, results: Path) -> None:
    outcome = api.run_benchmark(_options(engine, workdir, results))
    assert outcome.status is RunStatus.COMPLETE
    assert _passed(outcome) == {1: True, 2: True, 3: True, 4: True, 5: None}  # 5: a fresh build only
    store = api.open_results(results)
    try:
        report = api.analyse_run(store, outcome.run_id)
        record = store.run(outcome.run_id)
    finally:
        store.close()
    assert report.presentation.headline.name == "tps" and report.figures.headline > 0
    assert record.spec.workload == "tpcb" and record.spec.options["transactions"] == "client"
    assert report.figures.outcomes["failed"] == 0


def test_a_short_run_on_sqlite_keeps_the_balances_agreeing(tmp_path: Path) -> None:
    _run_and_check("sqlite", tmp_path / "work", tmp_path / "results.db")


def test_a_short_run_on_postgres_keeps_the_balances_agreeing(server_workdir: Path, tmp_path: Path) -> None:
    _run_and_check("postgres", server_workdir, tmp_path / "results.db")


def test_a_short_run_on_mariadb_keeps_the_balances_agreeing(server_workdir: Path, tmp_path: Path) -> None:
    _run_and_check("mariadb", server_workdir, tmp_path / "results.db")


@pytest.fixture
def built(tmp_path: Path) -> SQLiteEngine:
    workload = Tpcb()
    settings = workload.settings(SMALL)
    engine = SQLiteEngine(tmp_path, workload.database_name(settings), {})
    workload.load(engine, settings, 1, lambda table, rows: None)
    return engine


def test_a_fresh_build_passes_and_an_injected_imbalance_fails(built: SQLiteEngine) -> None:
    workload, session = Tpcb(), built.connect()
    try:
        assert all(r.passed for r in workload.check(session, True, built.dialect))
        session.begin()
        session.execute("UPDATE tellers SET tbalance = tbalance + 7 WHERE tid = 3")
        session.execute("DELETE FROM accounts WHERE aid = 9")
        session.commit()
        results = {r.condition: r for r in workload.check(session, False, built.dialect)}
    finally:
        session.close()
    assert [results[n].passed for n in range(1, 6)] == [False, True, False, True, None]
    assert results[1].detail == "accounts: 999 rows, 1,000 loaded"
    assert results[3].detail == "sum(tbalance) = 7, sum(delta) = 0: +7"


def test_the_terminals_draw_as_pgbench_within_the_database(built: SQLiteEngine) -> None:
    settings = TpcbRunSettings(branches=2, accounts_per_branch=500, seed=4)
    drawn = [inputs for _, inputs in TpcbEmulator(settings, 0, built.dialect).batch(2000)]
    assert {d.bid for d in drawn} == {1, 2} and {d.tid for d in drawn} == set(range(1, 21))
    assert min(d.aid for d in drawn) >= 1 and max(d.aid for d in drawn) <= 1000
    assert min(d.delta for d in drawn) >= -5000 and max(d.delta for d in drawn) <= 5000
    again = [inputs for _, inputs in TpcbEmulator(settings, 0, built.dialect).batch(2000)]
    assert again == drawn  # seeded per terminal: a run can be repeated


def test_one_update_changes_each_balance_and_records_the_delta(built: SQLiteEngine) -> None:
    transaction, session = Tpcb().transactions(built.dialect)["balance_update"], built.connect()
    try:
        session.begin()
        balance = transaction.execute(session, (5, 2, 1, -42))
        session.commit()
        rows = session.fetchone("SELECT (SELECT abalance FROM accounts WHERE aid = 5), "
                                "(SELECT tbalance FROM tellers WHERE tid = 2), "
                                "(SELECT bbalance FROM branches WHERE bid = 1), (SELECT delta FROM history)")
    finally:
        session.close()
    assert balance == -42 and rows == (-42, -42, -42, -42)


@pytest.mark.parametrize("given, message", [
    ({"scale": 0}, "scale: expected an integer of at least 1 and at most 100,000, got 0"),
    ({"accounts_per_branch": -1}, "accounts_per_branch: expected an integer of at least 1 and at most 10,000,000, "
                                  "got -1"),
    ({"scal": 2}, "scal: not a setting of the tpcb workload: did you mean scale?"),
])
def test_a_bad_setting_is_one_line(given: dict, message: str) -> None:
    with pytest.raises(SettingError) as refused:
        Tpcb().settings(given)
    assert str(refused.value) == message and "\n" not in message


def test_the_command_line_gives_a_bad_scale_as_its_option(tmp_path: Path) -> None:
    ran = CliRunner().invoke(app, ["run", "--workload", "tpcb", "--scale", "0", "--workdir", str(tmp_path)])
    assert isinstance(ran.exception, UserError)
    assert str(ran.exception) == "--scale must be at least 1 and at most 100,000, got 0"


def test_server_side_transactions_are_refused_where_the_workload_has_none(tmp_path: Path) -> None:
    options = _options("postgres", tmp_path, tmp_path / "results.db", transactions="server")
    with pytest.raises(UserError, match="the tpcb workload has no server-side transactions: use --transactions client"):
        api.run_benchmark(options)


def test_the_headline_counts_per_second_where_tpcc_counts_per_minute() -> None:
    samples = [TxnSample(0, "balance_update", t * 0.1, 0.01, Outcome.COMMITTED) for t in range(100)]
    window = Window(0.0, 10.0)
    per_second = run_figures(samples, window, ["balance_update"], "balance_update", Tpcb.headline.per_seconds)
    per_minute = run_figures(samples, window, ["balance_update"], "balance_update")
    assert (per_second.headline, per_second.committed) == (10, pytest.approx(10.0))  # 100 in 10 s
    assert per_minute.headline == 600 and Tpcb.headline.period == "s"
    assert Tpcb.headline.rate(99, 10.0) == pytest.approx(9.9)
