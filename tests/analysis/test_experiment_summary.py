"""An experiment's cells from constructed runs: in a rate sweep each cell is a step at one client count and one rate,
never several rates averaged, and a step's gains are over the same level of the step before and of the baseline."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Mapping, Sequence

import pytest

from maximus.analysis.compare import Verdict
from maximus.analysis.experiment import ExperimentSummary, RunRow, summarise
from maximus.analysis.metrics import RunFigures, run_figures
from maximus.experiment.plan import Level
from maximus.records import Outcome, RunStatus, TxnSample, Window
from maximus.workloads.tpcc import Tpcc

MINUTE = Window(0.0, 60.0)  # one minute: tpmC is the count of New-Orders

# tpmC of each run by (step, rate) at 2 clients, two repeats each: "wal" does what the baseline did at 20/s, and twice
# as much at 60/s (a rate the baseline could not keep). Pooled over the rates, both steps would be noise.
SWEPT = {(0, 20.0): [100, 110], (0, 60.0): [300, 330], (1, 20.0): [100, 110], (1, 60.0): [600, 660]}
LEVELS = (Level(2, 20.0), Level(2, 60.0))


def _figures(new_orders: int) -> RunFigures:
    samples = [TxnSample(0, "new_order", 0.5 + i * 50 / new_orders, 0.010, Outcome.COMMITTED)
               for i in range(new_orders)]
    return run_figures(samples, MINUTE, Tpcc.reported_transactions, Tpcc.headline.transaction)


def _rows(tpmc: Mapping[tuple[int, float], Sequence[int]]) -> list[RunRow]:
    """Complete runs at 2 clients, numbered from 1 in the order of ``tpmc``; each step loads in 3 s less its index."""
    run_ids = itertools.count(1)
    return [RunRow(next(run_ids), step, 2, RunStatus.COMPLETE, 3.0 - step, True, _figures(value), rate)
            for (step, rate), values in tpmc.items() for value in values]


@pytest.fixture
def swept() -> ExperimentSummary:
    rows = _rows(SWEPT)
    return summarise(Tpcc.headline, ["baseline", "wal"], LEVELS, len(rows), rows)


def test_each_rate_is_a_cell_of_its_own_runs(swept: ExperimentSummary) -> None:
    assert swept.levels == LEVELS and swept.swept
    for (step, rate), values in SWEPT.items():
        cell = swept.cell(step, 2, rate)
        assert (cell.rate, cell.level) == (rate, Level(2, rate))
        assert cell.headline.mean == pytest.approx(sum(values) / 2) and cell.headline.n == 2
    assert [cell.run_ids for cell in swept.cells] == [(1, 2), (3, 4), (5, 6), (7, 8)]


def test_a_steps_gains_are_over_the_same_rate_of_the_step_before_and_of_the_baseline(swept: ExperimentSummary) -> None:
    kept, doubled = swept.cell(1, 2, 20.0), swept.cell(1, 2, 60.0)
    assert kept.step_gain.ratio == pytest.approx(1.0) and kept.step_gain.verdict is Verdict.WITHIN_NOISE
    assert doubled.step_gain.ratio == pytest.approx(2.0) and doubled.step_gain.verdict is Verdict.FASTER
    assert doubled.baseline_gain.ratio == pytest.approx(2.0) and swept.significant_steps == 1


def test_the_summary_line_reads_the_final_step_at_the_highest_level(swept: ExperimentSummary) -> None:
    assert swept.highest_level == Level(2, 60.0)
    assert swept.headline() == ("load time -33 %, tpmC +100 % from baseline at 2 clients @ 60/s, "
                                "1 of 1 step significant")


def test_a_sweep_has_no_cell_without_a_rate(swept: ExperimentSummary) -> None:
    with pytest.raises(KeyError, match="no cell of step 1 at 2 clients .*2 @ 20/s, 2 @ 60/s"):
        swept.cell(1, 2)


def test_a_closed_loop_cell_is_its_client_count_as_before() -> None:
    rows = [replace(row, rate=None) for row in _rows({(0, 20.0): [100, 110], (1, 20.0): [200, 220]})]
    closed = summarise(Tpcc.headline, ["baseline", "wal"], [Level(2)], len(rows), rows)
    assert closed.levels == (Level(2),) and not closed.swept and closed.highest_level == Level(2)
    cell = closed.cell(1, 2)
    assert cell.rate is None and cell.run_ids == (3, 4) and cell.step_gain.ratio == pytest.approx(2.0)
    assert closed.headline() == "load time -33 %, tpmC +100 % from baseline, 1 of 1 step significant"
