"""The live line of a run names the workload's headline transaction in its headline's period."""

from __future__ import annotations

import io

from rich.console import Console

from maximus.report.progress import RunCountdown
from maximus.workloads import workload


def _line_after(name: str, done: list[tuple[float, int]]) -> str:
    countdown = RunCountdown(Console(file=io.StringIO()))
    countdown.started(1.0, 10.0, workload(name).headline)
    try:
        for at, count in done:
            countdown._history.append((at, count))
        return countdown._line(5.0, done[-1][1], done[-1][1])
    finally:
        countdown.stop()


def test_tpcc_counts_new_orders_per_minute_and_tpcb_transactions_per_second() -> None:
    assert "[bold]600[/] New-Orders/min" in _line_after("tpcc", [(0.0, 0), (2.0, 20)])
    tpcb = workload("tpcb").headline
    assert f"[bold]10[/] {tpcb.per_second_name}/s" in _line_after("tpcb", [(0.0, 0), (2.0, 20)])
