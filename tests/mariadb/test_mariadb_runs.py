"""Real multi-terminal runs on a managed MariaDB server, in both transaction modes: stored, with every outcome
counted, and consistent (the twelve conditions of 3.3.2). The server-side run continues on the data the
client-side one left (no second restore: the suite's time), and is checked on it as well."""

from __future__ import annotations

from pathlib import Path

from maximus import api
from maximus.records import Outcome, RunStatus
from maximus.workloads.tpcc.constants import TRANSACTIONS


def test_multi_terminal_runs_in_both_modes_pass_every_consistency_condition(mariadb_loaded: Path,
                                                                            tmp_path: Path) -> None:
    for transactions, restore in (("client", True), ("server", False)):
        options = api.BenchmarkOptions(engine="mariadb", workdir=mariadb_loaded, results=tmp_path / "results.db",
                                       terminals=4, warmup_s=0.3, duration_s=2.0, transactions=transactions,
                                       restore=restore)
        outcome = api.run_benchmark(options)
        assert outcome.status is RunStatus.COMPLETE, transactions
        verdicts = {r.condition: r.passed for r in outcome.consistency}
        assert verdicts == {**{n: True for n in range(1, 13)}, 11: None}, transactions  # 11: a fresh load only
        store = api.open_results(tmp_path / "results.db")
        try:
            samples, record = store.samples(outcome.run_id), store.run(outcome.run_id)
            report = api.analyse_run(store, outcome.run_id)
            metrics = store.metric_samples(outcome.run_id)
        finally:
            store.close()
        assert {s.terminal for s in samples} == {0, 1, 2, 3}
        assert {s.transaction for s in samples} >= set(TRANSACTIONS) | {"deferred_delivery"}
        assert not [s for s in samples if s.outcome is Outcome.FAILED], transactions
        assert report.figures.headline > 0 and report.figures.committed <= report.figures.headline
        assert record.spec.options["transactions"] == transactions
        assert record.environment["engine"]["name"] == "mariadb"
        assert record.engine_settings["performance_schema"] == "ON"  # turned on for the sampler, and recorded
        data_reads = [m for m in metrics if m.source == "mariadb" and m.name == "waits_total"
                      and m.labels.get("role") == "data_read"]
        assert data_reads, transactions
        assert {m.name for m in metrics if m.source == "mariadb"} >= {"log_bytes_total", "buffer_hits_total",
                                                                     "fsyncs_total", "process_cpu_seconds_total"}
        fsyncs = [m.value for m in metrics if m.source == "mariadb" and m.name == "fsyncs_total"]
        assert max(fsyncs) - min(fsyncs) > 10, transactions  # durable commits: a sync each (the redo log's)


def test_a_fixed_rate_run_in_server_side_mode_keeps_its_schedule(mariadb_loaded: Path, tmp_path: Path) -> None:
    """Issue #45 on MariaDB: a fixed rate's terminals each run in a process of their own (no shared C pump), every
    sample has its intended start, and a rate the server sustains is judged so."""
    outcome = api.run_benchmark(api.BenchmarkOptions(engine="mariadb", workdir=mariadb_loaded, terminals=2,
                                                     results=tmp_path / "results.db", warmup_s=0.5, duration_s=2.0,
                                                     monitor=False, rate=30.0, arrivals="poisson"))
    assert outcome.status is RunStatus.COMPLETE
    store = api.open_results(tmp_path / "results.db")
    try:
        report = api.analyse_run(store, outcome.run_id)
    finally:
        store.close()
    assert report.record.spec.options["transactions"] == "server"
    assert report.rate is not None and report.rate.sustained and report.rate.scheduled > 30, report.rate
    terminals = [s for s in outcome.result.samples if not s.transaction.startswith("deferred_")]
    assert terminals and all(s.intended is not None and s.start >= s.intended - 0.002 for s in terminals)
