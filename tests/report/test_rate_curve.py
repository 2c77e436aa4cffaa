"""A rate sweep's table and chart, as data: what each row says and what the chart draws, knee included."""

from __future__ import annotations

from maximus.analysis.rate_curve import RateRun, rate_curve
from maximus.records import Headline, Presentation
from maximus.report.rate_curve import KNEE, columns, rate_curve_chart, rows

SHOWN = Presentation(Headline("tpmc", "tpmC", "", "new_order", "nopm", "NOPM", "", "New-Orders"), "TPC-C-like", False,
                     "1 warehouse(s)", "1 wh", "", "", {"new_order": "New-Order"}, {})


def _run(rate: float, p90_ms: float, sustained: bool, clients: int = 4) -> RateRun:
    return RateRun(int(rate) + clients, 0, clients, rate, rate - 1, sustained, p90_ms / 1000, 3 * p90_ms / 1000,
                   p90_ms / 2000)


def _curve(clients: int = 4):
    runs = [_run(100, 4.0, True, clients), _run(200, 6.0, True, clients), _run(400, 50.0, False, clients)]
    return rate_curve(runs, 0, "baseline", clients, (100, 200, 400, 800))


def test_a_row_per_rate_with_the_knee_on_its_own() -> None:
    assert columns(SHOWN) == ("Rate /s", "Achieved /s", "New-Order p90 ms", "New-Order p99 ms", "Service p90 ms",
                              "Sustained", "Knee")
    assert rows(_curve()) == [["100", "99.0", "4.0", "12.0", "2.0", "yes", ""],
                              ["200", "199.0", "6.0", "18.0", "3.0", "yes", KNEE],
                              ["400", "399.0", "50.0", "150.0", "25.0", "no", ""],
                              ["800", "-", "-", "-", "-", "not measured", ""]]


def test_the_chart_draws_each_measured_rate_against_its_achieved_rate_and_stars_the_knee() -> None:
    chart = rate_curve_chart([_curve(4), _curve(8)], SHOWN)
    assert chart.title == "New-Order response time against throughput (5.6.2), step 0: baseline"
    p90, p99 = chart.lines[0], chart.lines[1]
    assert (p90.name, p99.name, chart.lines[2].name) == ("4 clients · p90", "4 clients · p99", "8 clients · p90")
    assert p90.x == (99.0, 199.0, 399.0) and p90.y == (4.0, 6.0, 50.0)  # 800/s was not measured: not drawn
    assert p90.text == ("100/s", "200/s", "400/s") and p90.sustained == (True, True, False)
    assert p99.y == (12.0, 18.0, 150.0) and p99.dotted and not p90.dotted
    assert [(knee.x, knee.y, knee.text, knee.colour) for knee in chart.knees] == [(199.0, 6.0, "knee 200/s", 0),
                                                                                  (199.0, 6.0, "knee 200/s", 1)]


def test_a_step_without_a_measured_rate_has_a_note_instead_of_a_chart() -> None:
    chart = rate_curve_chart([rate_curve([], 0, "baseline", 4, (100, 200))], SHOWN)
    assert chart.lines == () and chart.knees == () and chart.note == "no rate of this step was measured"
