"""A real multi-terminal run on SQLite: stored, consistent, and every figure traceable to samples."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from maximus import api, runs
from maximus.analysis.metrics import run_figures
from maximus.workloads.tpcc import Tpcc
from maximus.records import Outcome, RunStatus
from maximus.workloads.tpcc.constants import TRANSACTIONS


def _run(workdir: Path, tmp_path: Path, **overrides) -> api.RunOutcome:
    options = api.BenchmarkOptions(**{"workdir": workdir, "results": tmp_path / "results.db", "terminals": 3,
                                      "warmup_s": 1.0, "duration_s": 4.0, **overrides})
    return api.run_benchmark(options)


def test_multi_terminal_run_is_stored_and_passes_every_consistency_condition(workdir: Path, tmp_path: Path) -> None:
    outcome = _run(workdir, tmp_path)
    assert outcome.status is RunStatus.COMPLETE
    verdicts = {r.condition: r.passed for r in outcome.consistency}
    assert verdicts == {**{n: True for n in range(1, 13)}, 11: None}  # 11 holds only on a fresh load
    store = api.open_results(tmp_path / "results.db")
    samples = store.samples(outcome.run_id)
    record = store.run(outcome.run_id)
    report = api.analyse_run(store, outcome.run_id)
    histograms = store.latency_histograms(outcome.run_id)
    store.close()
    assert len(samples) == len(outcome.result.samples) > 100
    assert histograms and {h.transaction for h in histograms} >= set(TRANSACTIONS)  # every response time, kept
    assert report.figures == run_figures(samples, record.window, Tpcc.reported_transactions,
                                         Tpcc.headline.transaction)  # what the samples make: the same figures
    assert {s.terminal for s in samples} == {0, 1, 2}
    assert {s.transaction for s in samples} >= set(TRANSACTIONS) | {"deferred_delivery"}
    assert not [s for s in samples if s.outcome is Outcome.FAILED]
    _assert_each_terminal_delivers_its_own(samples)
    assert report.figures.headline > 0 and report.figures.committed <= report.figures.headline
    assert record.environment["engine"]["name"] == "sqlite"
    assert record.engine_settings["journal_mode"] == "delete"
    assert record.load_seconds and record.load_seconds > 0
    with sqlite3.connect(workdir / "tpcc-1wh.sqlite") as database:  # SQLite's own clock, to the millisecond
        stamps = [stamp for (stamp,) in database.execute("SELECT o_entry_d FROM orders WHERE o_id > 3000")]
    assert stamps and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}", stamp) for stamp in stamps)
    assert any(not stamp.endswith(".000") for stamp in stamps)


def _assert_each_terminal_delivers_its_own(samples: list) -> None:
    """One writer at a time (SQLite): each terminal acknowledges its Delivery at once (2.7.2.1), then executes it on
    its own connection before its next transaction, where a deferred worker would have run it beside that."""
    by_terminal: dict[int, list] = {}
    for sample in sorted(samples, key=lambda s: (s.start, s.transaction != "delivery")):  # acknowledged first
        by_terminal.setdefault(sample.terminal, []).append(sample)
    checked = 0
    for own in by_terminal.values():
        for acknowledged, executed, following in zip(own, own[1:], own[2:]):
            if acknowledged.transaction != "delivery":
                continue
            assert executed.transaction == "deferred_delivery" and executed.start == acknowledged.start
            assert acknowledged.latency < executed.latency / 2  # the acknowledgement is not the Delivery
            assert following.start >= executed.start + executed.latency
            checked += 1
    assert checked >= 3


def test_only_a_fixed_rate_run_on_sqlite_has_a_deferred_worker(tmp_path: Path) -> None:
    """A fixed-rate terminal that executed its own Deliveries would start its next transactions late."""
    sqlite = api.make_engine("sqlite", tmp_path, api.Build.of("tpcc", {"warehouses": 1}), {})
    postgres = api.make_engine("postgres", tmp_path, api.Build.of("tpcc", {"warehouses": 1}), {})
    assert runs.own_deferred(sqlite, "process") and not runs.own_deferred(sqlite, "process", scheduled=True)
    assert not runs.own_deferred(postgres, "process") and runs.own_deferred(postgres, "multiplexed")


def test_wal_knob_takes_effect_and_runs_restore_pristine_data(workdir: Path, tmp_path: Path) -> None:
    first = _run(workdir, tmp_path, knobs={"journal_mode": "wal", "synchronous": "normal"})
    second = _run(workdir, tmp_path, knobs={"journal_mode": "wal", "synchronous": "normal"})
    store = api.open_results(tmp_path / "results.db")
    record = store.run(second.run_id)
    store.close()
    assert record.engine_settings["journal_mode"] == "wal"
    assert record.engine_settings["synchronous"] == "1"  # NORMAL, as SQLite reports it
    assert not record.loaded_in_run  # the pristine copy was restored, not rebuilt
    assert all(r.passed is not False for r in first.consistency + second.consistency)


def test_keyed_run_with_think_times_is_throttled(workdir: Path, tmp_path: Path) -> None:
    """5.2.5: with keying times of at least 2 s, each terminal completes at most one transaction in 4 s."""
    outcome = _run(workdir, tmp_path, settings={"keying": True})
    interactive = [s for s in outcome.result.samples if not s.transaction.startswith("deferred_")]
    assert len(interactive) <= 3 * 2
    store = api.open_results(tmp_path / "results.db")
    assert not any("TPC-C-like" in w for w in store.run(outcome.run_id).warnings)
    assert api.analyse_run(store, outcome.run_id).presentation.benchmark == "TPC-C"
    store.close()


def test_more_terminals_than_a_warehouse_has_run_and_are_labelled_tpc_c_like(workdir: Path, tmp_path: Path) -> None:
    """2.8.1.1 gives each (warehouse, district) pair one terminal: eleven on one warehouse share a pair. The run is
    allowed, warned about, and labelled TPC-C-like even with keying and think times on."""
    outcome = _run(workdir, tmp_path, terminals=11, duration_s=1.0, settings={"keying": True})
    assert outcome.status is RunStatus.COMPLETE
    store = api.open_results(tmp_path / "results.db")
    try:
        record, report = store.run(outcome.run_id), api.analyse_run(store, outcome.run_id)
    finally:
        store.close()
    assert any(w.startswith("11 terminals per warehouse, more than the 10 of 4.2.2") for w in record.warnings)
    assert report.presentation.benchmark == "TPC-C-like (more than 10 terminals per warehouse)"
    assert not report.presentation.conforming and "2.8.1.1" in report.presentation.conformance


class _Seen(Exception):
    pass


def test_what_an_engine_sets_for_many_terminals_reaches_the_engine_that_runs(tmp_path: Path, monkeypatch) -> None:
    """The run's engine is made anew after the checks (a layout may move it): 150 terminals need a managed
    server with room for them (max_connections), on that engine, not only on the one checked before."""
    from maximus import runs

    seen: dict[str, str | None] = {}

    def capture(store, machine, *args, **kwargs):
        seen["max_connections"] = machine.engine.effective_settings.get("max_connections")
        raise _Seen()

    monkeypatch.setattr(runs, "_run", capture)
    options = api.BenchmarkOptions(engine="postgres", workdir=tmp_path / "work", results=tmp_path / "results.db",
                                   terminals=150, warmup_s=0, duration_s=1)
    try:
        api.run_benchmark(options)
    except _Seen:
        pass
    assert seen["max_connections"] == "170"
