"""A rate sweep's curve and its knee, on figures built by hand: the knee is the highest rate up to which every rate,
from the lowest, was sustained with a latency p90 at most twice the lowest rate's."""

from __future__ import annotations

import math

from maximus.analysis.rate_curve import KNEE_FACTOR, RateRun, rate_curve, rate_curves


def _run(rate: float, p90_ms: float, sustained: bool = True, repeat: int = 1) -> RateRun:
    """A run of step 0 at 4 clients: 99.5 % of its rate achieved, its p99 twice its p90, its service p90 half."""
    return RateRun(int(rate) * 10 + repeat, 0, 4, rate, rate * 0.995, sustained, p90_ms / 1000, 2 * p90_ms / 1000,
                   p90_ms / 2000)


def _knee(runs: list[RateRun], rates: tuple[float, ...] = (100, 200, 400, 800)) -> float | None:
    curve = rate_curve(runs, 0, "baseline", 4, rates)
    return curve.knee.rate if curve.knee else None


def test_the_knee_is_the_last_rate_within_twice_the_lowest_rates_p90() -> None:
    assert KNEE_FACTOR == 2.0
    # 4 ms at 100/s allows 8 ms: 400/s at 7.9 ms is within, 800/s at 8.1 ms is past it
    assert _knee([_run(100, 4.0), _run(200, 5.0), _run(400, 7.9), _run(800, 8.1)]) == 400
    assert _knee([_run(100, 4.0), _run(200, 5.0), _run(400, 8.0), _run(800, 30.0)]) == 400  # "at most": 8.0 is in


def test_a_rate_not_sustained_ends_the_walk_even_below_the_latency_limit() -> None:
    assert _knee([_run(100, 4.0), _run(200, 5.0, sustained=False), _run(400, 5.0), _run(800, 30.0)]) == 100


def test_the_walk_stops_at_the_first_rate_past_the_knee_whatever_comes_after() -> None:
    assert _knee([_run(100, 4.0), _run(200, 9.0), _run(400, 5.0), _run(800, 6.0)]) == 100


def test_no_knee_when_the_lowest_rate_was_not_sustained_or_not_measured() -> None:
    assert _knee([_run(100, 4.0, sustained=False), _run(200, 4.0), _run(400, 4.0), _run(800, 4.0)]) is None
    curve = rate_curve([_run(200, 4.0), _run(400, 4.0), _run(800, 4.0)], 0, "baseline", 4, (100, 200, 400, 800))
    assert curve.knee is None and curve.verdict == "no knee: 100/s: not measured (no complete run)"


def test_a_rate_is_sustained_only_when_every_repeat_was() -> None:
    runs = [_run(100, 4.0), _run(100, 4.0, repeat=2), _run(200, 5.0), _run(200, 5.0, sustained=False, repeat=2)]
    curve = rate_curve(runs, 0, "baseline", 4, (100, 200))
    low, high = curve.points
    assert (low.sustained, low.sustained_runs, len(low.run_ids)) == (True, 2, 2)
    assert (high.sustained, high.sustained_runs, len(high.run_ids)) == (False, 1, 2)
    assert curve.knee is low
    assert curve.verdict == ("knee at 100/s: every rate up to it sustained with latency p90 at most 2 × the lowest "
                             "rate's (8.0 ms at most); 200/s: not sustained (1 of 2 runs kept up)")


def test_points_are_means_over_the_repeats_in_increasing_rate() -> None:
    runs = [_run(400, 6.0), _run(100, 3.0), _run(100, 5.0, repeat=2)]
    curve = rate_curve(runs, 0, "baseline", 4, (400, 100))
    assert [point.rate for point in curve.points] == [100, 400]
    low = curve.points[0]
    assert math.isclose(low.latency_p90_s.mean, 0.004) and low.latency_p90_s.n == 2
    assert math.isclose(low.latency_p99_s.mean, 0.008) and math.isclose(low.service_p90_s.mean, 0.002)
    assert math.isclose(low.achieved.mean, 99.5)
    assert curve.verdict.startswith("knee at 400/s") and "sweep higher rates" in curve.verdict  # 6 ms <= 2 x 4 ms


def test_every_step_and_client_count_has_a_curve_and_a_closed_loop_experiment_none() -> None:
    runs = [_run(100, 4.0)]
    curves = rate_curves(runs, ["baseline", "wal"], [4, 8], (100,))
    assert [(c.step, c.step_name, c.clients) for c in curves] == [(0, "baseline", 4), (0, "baseline", 8),
                                                                   (1, "wal", 4), (1, "wal", 8)]
    assert [len(c.points[0].run_ids) for c in curves] == [1, 0, 0, 0]
    assert rate_curves(runs, ["baseline"], [4], ()) == ()
