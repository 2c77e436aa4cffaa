"""Confidence intervals and verdicts checked on known data."""

from __future__ import annotations

import math

import pytest

from maximus.analysis.compare import Verdict, batch_means, compare, estimate
from maximus.analysis.steady import steady_state_warning, trend


def test_estimate_matches_the_t_interval() -> None:
    result = estimate([10.0, 12.0, 14.0])  # mean 12, sd 2, t(0.975, 2) = 4.303
    assert result.mean == 12.0 and result.n == 3
    assert result.high - result.mean == pytest.approx(4.302653 * 2 / math.sqrt(3), rel=1e-6)
    assert math.isnan(estimate([5.0]).low) and estimate([]).n == 0


def test_a_clear_gain_is_faster_and_a_clear_loss_slower() -> None:
    base, better = [1000, 1010, 990, 1005], [1500, 1490, 1510, 1495]
    gain = compare(base, better)
    assert gain.verdict is Verdict.FASTER and gain.low > 1.4 and gain.ratio == pytest.approx(1.495, rel=0.01)
    assert compare(better, base).verdict is Verdict.SLOWER
    assert compare(base, better, higher_is_better=False).verdict is Verdict.SLOWER  # e.g. latency went up


def test_a_two_percent_gain_inside_twenty_percent_noise_is_within_noise() -> None:
    base, step = [1000, 1250, 800, 1100, 900], [1020, 1275, 816, 1122, 918]
    result = compare(base, step)
    assert result.ratio == pytest.approx(1.02, rel=1e-3)
    assert result.low < 1 < result.high
    assert result.verdict is Verdict.WITHIN_NOISE
    assert result.repeats_needed and result.repeats_needed > 5  # a 2 % effect in this noise needs many repeats


def test_one_repeat_gives_no_verdict() -> None:
    result = compare([1000], [2000])
    assert result.verdict is Verdict.NEEDS_REPEATS and result.ratio == pytest.approx(2.0)
    assert math.isnan(result.low)


def test_batch_means_split_a_series_evenly() -> None:
    assert batch_means(list(range(20)), batches=4) == [2.0, 7.0, 12.0, 17.0]


def test_a_rising_series_is_not_steady_and_a_flat_noisy_one_is() -> None:
    rising = [100 + 3 * i for i in range(30)]
    assert trend(rising).change > 0.5
    assert "still rising" in steady_state_warning(7, rising)
    flat = [100, 103, 98, 101, 99, 102, 100, 97, 103, 100] * 3
    assert steady_state_warning(7, flat) is None


@pytest.mark.parametrize("seed", range(6))
def test_the_trend_test_agrees_with_scipy_linregress(seed: int) -> None:
    """The slope test is written out (scipy.stats costs every command 1.8 s to import); scipy's own
    linregress, imported here only, is the reference."""
    import numpy as np
    from scipy.stats import linregress

    rng = np.random.default_rng(seed)
    series = list(rng.normal(100, 8, 12 + 7 * seed) + np.arange(12 + 7 * seed) * rng.normal(0, 0.8))
    fit = linregress(np.arange(len(series)), series)
    found = trend(series)
    assert found.p_value == pytest.approx(fit.pvalue, rel=1e-9, abs=1e-12)
    assert found.change == pytest.approx(fit.slope * (len(series) - 1) / np.mean(series), rel=1e-9)
