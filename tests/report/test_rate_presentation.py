"""A fixed-rate run wherever a run is shown (issue #45): ``show``, the HTML report, the exports and ``compare`` give its
latency from the intended start beside its service time, and its schedule with the verdict; a closed-loop run looks
as it did before fixed rates. Three real SQLite runs, made once for the module: one at a rate two terminals keep, one
at a rate one terminal cannot, and one in closed loop."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from maximus import api
from maximus.analysis.bundle import RunData, gather_run
from maximus.analysis.stats import LatencySummary
from maximus.cli.app import app
from maximus.records import ARRIVALS_OPTION, RATE, RunStatus
from maximus.report import charts, html

RATE_COLUMNS = ["rate_target_per_s", "rate_arrivals", "rate_achieved_per_s", "rate_scheduled", "rate_done",
                "rate_backlog_at_start", "rate_backlog_at_end", "rate_warmup_backlog", "rate_unstarted",
                "rate_start_error_p99_ms", "rate_sustained"]
TRANSACTIONS = ["new_order", "payment", "order_status", "delivery", "deferred_delivery", "stock_level"]
SERVICE_COLUMNS = [f"{name}_service_{stat}_ms" for name in TRANSACTIONS
                   for stat in ("avg", "p50", "p90", "p95", "p99", "max")]


@dataclass(frozen=True)
class Runs:
    results: Path
    steady: int  # 20/s, Poisson arrivals, two terminals: well within what SQLite does, on a busy machine too
    overloaded: int  # 20,000/s on one terminal: a backlog from the first second
    closed: int  # closed loop

    def data(self, run_id: int) -> RunData:
        store = api.open_results(self.results)
        try:
            return gather_run(store, run_id)
        finally:
            store.close()


@pytest.fixture(scope="module")
def runs(built_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    directory = tmp_path_factory.mktemp("rate-presentation")
    workdir, results = directory / "work", directory / "results.db"
    shutil.copytree(built_workdir, workdir)

    def run(terminals: int, rate: float | None, arrivals: str = "regular") -> int:
        options = api.BenchmarkOptions(workdir=workdir, results=results, warmup_s=0.5, duration_s=2,
                                       terminals=terminals, rate=rate, arrivals=arrivals, monitor=False)
        return api.run(options).run_id

    return Runs(results, run(2, 20.0, "poisson"), run(1, 20_000.0), run(2, None))


def _cli(runs: Runs, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--results", str(runs.results)])
    assert result.exit_code == 0, result.output
    return result.stdout


def _flat(output: str) -> str:
    """The output with its lines joined as they were wrapped: one space between words."""
    return " ".join(output.split())


def _row(output: str, label: str) -> list[str]:
    """The cells of a table's row, by its first cell."""
    line = next(line for line in output.splitlines() if line.startswith(f"│ {label} "))
    return [cell.strip() for cell in line.strip("│").split("│")]


def _ms(summary: LatencySummary, *stats: str) -> list[str]:
    return [f"{getattr(summary, stat) * 1000:,.1f}" for stat in stats]


# --- maximus show --------------------------------------------------------------------------------------------


def test_show_heads_the_latency_from_the_intended_start_and_the_service_time_beside_it(runs: Runs) -> None:
    output = _cli(runs, "show", str(runs.overloaded))
    new_order = next(t for t in runs.data(runs.overloaded).report.figures.transactions if t.name == "new_order")
    assert new_order.service is not None
    assert "Response times (ms): latency (from intended start) and service time (from actual start)" in output
    headings = [line for line in output.splitlines() if line.startswith("┃")]
    assert [cell.strip() for cell in headings[0].strip("┃").split("┃")] == ["", "", "latency", "", "", "", "", "",
                                                                           "service", "", ""]
    assert [cell.strip() for cell in headings[1].strip("┃").split("┃")] == [
        "Transaction", "Count", "p50", "p90", "p95", "p99", "Avg", "Max", "p90", "p99", "p90 limit"]
    cells = _row(output, "New-Order")
    assert cells[2:8] == _ms(new_order.latency, "p50", "p90", "p95", "p99", "average", "maximum")
    assert cells[8:10] == _ms(new_order.service, "p90", "p99")
    assert new_order.latency.p50 > 5 * new_order.service.p50  # the backlog is in the latency, not the service time
    assert _row(output, "Deferred-Delivery")[8:10] == ["-", "-"]  # queued by a Delivery: no schedule starts it


def test_show_prints_the_schedule_with_its_verdict(runs: Runs) -> None:
    output = _cli(runs, "show", str(runs.steady))
    rate = runs.data(runs.steady).report.rate
    assert rate is not None and rate.arrivals == "poisson"
    assert "2 terminal(s) · fixed rate 20/s, poisson arrivals · " in _flat(output)
    schedule = output[output.index("Schedule (fixed rate, measured window)"):]
    for figure, value in (("Target", "20/s"), ("Achieved", f"{rate.achieved:,.1f}/s"),
                          ("Scheduled", f"{rate.scheduled:,}"), ("Done", f"{rate.done:,} ({100 * rate.ratio:.1f} %)"),
                          ("Backlog at start", f"{rate.backlog_at_start:,}"),
                          ("Backlog at end", f"{rate.backlog_at_end:,} ({rate.backlog_growth:+,})"),
                          ("Warm-up backlog skipped", f"{rate.warmup_backlog:,}"),
                          ("Unstarted", f"{rate.unstarted:,}"),
                          ("Start error p99", f"{rate.start_error_p99 * 1000:,.2f} ms")):
        assert re.search(rf"^ {re.escape(figure)} +{re.escape(value)}  ", schedule, re.M), figure
    assert "poisson arrivals over 2 terminals" in schedule
    assert f"Verdict: {_flat(rate.verdict)}" in _flat(schedule)


def test_a_rate_not_kept_is_said_in_the_verdict_and_among_the_warnings(runs: Runs) -> None:
    output = _flat(_cli(runs, "show", str(runs.overloaded)))
    rate = runs.data(runs.overloaded).report.rate
    assert rate is not None and not rate.sustained and rate.backlog_growth > 1000
    assert f"Verdict: {_flat(rate.verdict)}" in output and rate.verdict.startswith("not sustainable at 20,000/s: ")
    assert f"warning: {_flat(rate.verdict)}" in output
    assert re.search(r"Backlog at each second's end: \S+ \(max [\d,]+\)", output)  # it grew: not "none"


def test_a_closed_loop_run_is_shown_as_before_fixed_rates(runs: Runs) -> None:
    output = _cli(runs, "show", str(runs.closed))
    assert "Schedule" not in output and "fixed rate" not in output and "Verdict" not in output
    assert re.search(r"^Response times \(ms\) *$", output, re.M)
    assert "service" not in output and "intended" not in output
    headings = [line for line in output.splitlines() if line.startswith("┃ Transaction ")]
    assert [cell.strip() for cell in headings[0].strip("┃").split("┃")] == [
        "Transaction", "Count", "p50", "p90", "p95", "p99", "Avg", "Max", "p90 limit"]


def test_compare_says_when_one_run_kept_a_fixed_rate_and_the_other_did_not(runs: Runs) -> None:
    output = _cli(runs, "compare", str(runs.closed), str(runs.steady))
    assert "pacing closed loop → 20/s poisson" in output
    assert "pacing" not in _cli(runs, "compare", str(runs.closed), str(runs.closed))


# --- the HTML report -----------------------------------------------------------------------------------------


def test_the_run_report_has_latency_beside_service_time_the_schedule_and_its_chart(runs: Runs) -> None:
    run = runs.data(runs.overloaded)
    rate, page = run.report.rate, html.run_page(run)
    assert rate is not None
    assert ('<th class="group" colspan="6">latency (from intended start)</th>'
            '<th class="group" colspan="6">service time (from actual start)</th>') in page
    new_order = next(t for t in run.report.figures.transactions if t.name == "new_order")
    assert new_order.service is not None
    row = re.search(r'<td class="text">New-Order</td>((?:<td>[^<]*</td>)+)</tr>', page)
    assert row and re.findall(r"<td>([^<]*)</td>", row.group(1)) == [
        f"{new_order.completed:,}", *_ms(new_order.latency, "p50", "p90", "p95", "p99", "average", "maximum"),
        *_ms(new_order.service, "p50", "p90", "p95", "p99", "average", "maximum")]
    assert f'<td class="text">Scheduled</td><td>{rate.scheduled:,}</td>' in page
    assert f'<td class="text">Warm-up backlog skipped</td><td>{rate.warmup_backlog:,}</td>' in page
    assert f'Verdict: <span class="fail">{rate.verdict}</span>' in page
    assert 'data-chart="schedule"' in page and "<script src" not in page  # drawn by the inlined plotly
    assert "fixed rate 20,000/s, regular arrivals" in page  # the run's facts


def test_the_schedule_chart_draws_the_backlog_and_late_starts_of_every_second(runs: Runs) -> None:
    run = runs.data(runs.overloaded)
    rate, window = run.report.rate, run.report.record.window
    assert rate is not None
    chart = charts.schedule_over_time(rate, window, "t")
    backlog, late = chart.lines
    assert list(zip(backlog.x, backlog.y)) == [(float(s), float(n)) for s, n in rate.backlog]
    assert list(zip(late.x, late.y)) == [(float(s), float(n)) for s, n in rate.late]
    assert rate.backlog_at_end > 0 and any(n for _, n in rate.late)  # something to draw in both
    assert [(span.start, span.end) for span in chart.spans] == [(window.start, window.end)] and chart.floor == 0.0


def test_a_closed_loop_run_report_has_no_schedule(runs: Runs) -> None:
    page = html.run_page(runs.data(runs.closed))
    assert 'data-chart="schedule"' not in page and "Schedule (fixed rate" not in page
    assert "response-times" not in page and "intended start" not in page and "fixed rate" not in page


# --- the exports ---------------------------------------------------------------------------------------------


def _csv(runs: Runs, *args: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_cli(runs, "export", *args, "--format", "csv"))))


def test_the_csv_adds_the_schedule_and_the_service_times_after_every_older_column(runs: Runs) -> None:
    steady, closed = (_csv(runs, "--run", str(run_id))[0] for run_id in (runs.steady, runs.closed))
    header = list(closed)
    added = RATE_COLUMNS + SERVICE_COLUMNS + ["rate"]  # the last: a rate sweep's planned rate
    assert header[-len(added) - 1:] == ["errors", *added]  # older exports' columns keep their names and places
    assert list(steady) == header
    assert all(closed[name] == "" for name in added)  # a closed loop has none
    assert steady["rate"] == ""  # a run outside an experiment has no plan, so no planned rate
    run = runs.data(runs.steady)
    rate, new_order = run.report.rate, run.report.figures.transactions[0]
    assert rate is not None and new_order.service is not None and new_order.name == "new_order"
    assert (steady["rate_target_per_s"], steady["rate_arrivals"]) == ("20.0", "poisson")
    assert int(steady["rate_scheduled"]) == rate.scheduled and int(steady["rate_done"]) == rate.done
    assert steady["rate_sustained"] == str(rate.sustained)
    assert float(steady["new_order_service_p90_ms"]) == pytest.approx(new_order.service.p90 * 1000)
    assert float(steady["new_order_p90_ms"]) == pytest.approx(new_order.latency.p90 * 1000)
    assert float(steady["new_order_p90_ms"]) >= float(steady["new_order_service_p90_ms"])  # started at or after
    assert steady["deferred_delivery_service_p90_ms"] == ""


def test_the_json_has_the_rate_figures_and_each_transactions_service_time(runs: Runs) -> None:
    steady, closed = (json.loads(_cli(runs, "export", "--run", str(run_id))) for run_id in (runs.steady, runs.closed))
    rate = runs.data(runs.steady).report.rate
    assert rate is not None
    exported = steady["rate"]
    assert exported["verdict"] == rate.verdict and exported["sustained"] == rate.sustained
    assert (exported["target"], exported["arrivals"], exported["scheduled"]) == (20.0, "poisson", rate.scheduled)
    assert [tuple(pair) for pair in exported["backlog"]] == list(rate.backlog)
    assert steady["transactions"][0]["service"]["p90"] <= steady["transactions"][0]["latency"]["p90"]
    assert closed["rate"] is None and all(t["service"] is None for t in closed["transactions"])


def test_the_series_has_a_fixed_rate_runs_backlog_and_late_starts(runs: Runs) -> None:
    rows = _csv(runs, "--run", str(runs.overloaded), "--series")
    rate = runs.data(runs.overloaded).report.rate
    assert rate is not None
    for name, series in (("backlog", rate.backlog), ("late_starts", rate.late)):
        found = [(float(r["time_s"]), int(r["value"])) for r in rows if (r["source"], r["name"]) == ("schedule", name)]
        assert found == [(float(second), count) for second, count in series], name
    assert not [r for r in _csv(runs, "--run", str(runs.closed), "--series") if r["source"] == "schedule"]


def _report(runs: Runs, run_id: int) -> api.RunReport:
    store = api.open_results(runs.results)
    try:
        return api.analyse_run(store, run_id)
    finally:
        store.close()


def test_a_rate_sqlite_sustains_is_met_on_schedule_and_every_sample_has_its_intended_start(runs: Runs) -> None:
    report = _report(runs, runs.steady)
    rate = report.rate
    assert report.record.status is RunStatus.COMPLETE and rate is not None and rate.sustained, rate
    assert 20 <= rate.scheduled <= 60 and rate.unstarted == rate.warmup_backlog == 0  # 40 on average (Poisson)
    store = api.open_results(runs.results)
    try:
        samples = [s for s in store.samples(runs.steady) if not s.transaction.startswith("deferred_")]
    finally:
        store.close()
    assert samples and all(s.intended is not None and s.start >= s.intended - 0.002 for s in samples)
    assert rate.start_error_p99 < 0.05  # the scheduler's precision is a benchmark's (bench/rate_stall.py): not here
    assert report.figures.transactions[0].service is not None
    assert report.record.spec.options[RATE] == "20" and report.record.spec.options[ARRIVALS_OPTION] == "poisson"
    assert not any("sustainable" in warning for warning in report.warnings)


def test_a_rate_beyond_what_sqlite_can_do_is_not_sustainable_and_nothing_is_dropped_silently(runs: Runs) -> None:
    report = _report(runs, runs.overloaded)
    rate = report.rate
    assert rate is not None and not rate.sustained and rate.ratio < 0.5
    assert rate.warmup_backlog > 1000 and rate.unstarted > 1000  # the schedule's points never started are counted
    assert rate.backlog_at_start < rate.backlog_at_end
    backlog = dict(rate.backlog)  # the points never started count in every second they were due
    assert backlog[1] < backlog[2] < backlog[3] == rate.backlog_at_end
    assert rate.verdict in report.warnings and rate.verdict.startswith("not sustainable at 20,000/s")
    new_order = report.figures.transactions[0]
    assert new_order.service is not None and new_order.latency.p90 > 10 * new_order.service.p90


def test_a_closed_loop_run_stores_no_intended_start(runs: Runs) -> None:
    report = _report(runs, runs.closed)
    assert report.rate is None and report.figures.transactions[0].service is None
    store = api.open_results(runs.results)
    try:
        assert all(sample.intended is None for sample in store.samples(runs.closed))
    finally:
        store.close()
