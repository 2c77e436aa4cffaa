"""Fixed-throughput runs (issue #45): the schedule, its figures from constructed samples, and what cannot be
scheduled, in one line. Real runs at a fixed rate are tests/report/test_rate_presentation.py's (SQLite), and
PostgreSQL's and MariaDB's in their run tests."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest

from maximus.analysis.rate import rate_figures
from maximus.driver.schedule import RateSchedule
from maximus.records import ARRIVALS_OPTION, RATE, Outcome, RunSpec, TxnSample, Window


def test_regular_arrivals_interleave_the_terminals_evenly_at_the_whole_rate() -> None:
    schedule = RateSchedule(100.0, "regular", 4, 1)
    starts = sorted(start for terminal in range(4)
                    for start in itertools.islice(schedule.starts(terminal, 10.0), 25))
    assert starts[0] == 10.0 and len(starts) == 100
    assert all(math.isclose(b - a, 0.01, abs_tol=1e-9) for a, b in zip(starts, starts[1:]))


def test_poisson_arrivals_repeat_with_the_seed_and_keep_the_rate_on_average() -> None:
    first = list(itertools.islice(RateSchedule(50.0, "poisson", 2, 7).starts(1, 0.0), 2000))
    again = list(itertools.islice(RateSchedule(50.0, "poisson", 2, 7).starts(1, 0.0), 2000))
    other = list(itertools.islice(RateSchedule(50.0, "poisson", 2, 8).starts(1, 0.0), 2000))
    assert first == again and first != other
    gaps = [b - a for a, b in zip([0.0, *first], first)]
    assert all(gap > 0 for gap in gaps)
    assert 0.95 * 2000 / 25.0 < first[-1] < 1.05 * 2000 / 25.0  # each terminal's share: 25 a second
    assert 0.8 < sum(gaps) / len(gaps) / (sum(g * g for g in gaps) / len(gaps)) ** 0.5 * 2 ** 0.5 < 1.2  # exponential


def test_skip_counts_the_points_before_an_end_and_returns_the_first_after_it() -> None:
    starts = RateSchedule(10.0, "regular", 1, 1).starts(0, 0.0)
    first = next(starts)
    skipped, after = RateSchedule.skip(starts, first, 1.95, 0.0)
    assert skipped == {0: 10, 1: 10} and after == pytest.approx(2.0)


def _spec(rate: float = 10.0, terminals: int = 1) -> RunSpec:
    return RunSpec("sqlite", {}, "tpcc", {}, terminals, 1.0, 4.0, 1, options={RATE: f"{rate:g}",
                                                                               ARRIVALS_OPTION: "regular"})


def _sample(intended: float, start: float, latency: float, terminal: int = 0) -> TxnSample:
    return TxnSample(terminal, "payment", start, latency, Outcome.COMMITTED, intended=intended)


def test_a_stall_shows_in_the_backlog_late_starts_and_latency_not_in_service_time() -> None:
    # 10 a second on one terminal over [1, 5): a 1.5-s stall of the transaction intended at 2.0
    samples = [_sample(1.0 + k / 10, 1.0 + k / 10 + 0.0005, 0.005) for k in range(10)]
    samples.append(_sample(2.0, 2.0005, 1.5))
    late = [_sample(2.0 + k / 10, 3.5 + 0.006 * (k - 1), 0.005) for k in range(1, 16)]
    samples += late + [_sample(3.6 + k / 10, 3.6 + k / 10 + 0.0005, 0.005) for k in range(14)]
    figures = rate_figures(_spec(), samples, Window(1.0, 5.0), {"schedule.unstarted": 0})
    assert figures is not None
    assert figures.scheduled == figures.done == 40 and figures.sustained
    assert figures.backlog_at_start == figures.backlog_at_end == 0
    assert dict(figures.backlog)[3] == 9  # due at 2.1 .. 2.9 and not started at 3.0: the stall is not over
    assert dict(figures.late)[3] == 15 and dict(figures.late)[1] == 0
    assert figures.start_error_p99 == pytest.approx(0.0005, abs=1e-6)  # the late ones' terminal was busy: not errors
    assert max(s.scheduled_latency for s in late) > 1.4 and max(s.latency for s in late) < 0.01
    assert figures.verdict.startswith("rate sustained at 10/s: 10.0/s achieved, 100.0 % of the 40 scheduled done")


def test_a_rate_not_met_is_not_sustainable_and_says_why() -> None:
    samples = [_sample(1.0 + k / 10, 1.0 + k / 5, 0.19) for k in range(20)]  # half the rate: the backlog grows
    figures = rate_figures(_spec(), samples, Window(1.0, 5.0), {"schedule.unstarted": 20})
    assert figures is not None and not figures.sustained
    assert (figures.scheduled, figures.done) == (40, 20) and figures.backlog_at_end == 20
    assert figures.verdict == ("not sustainable at 10/s: 5.0/s achieved, 50.0 % of the 40 scheduled done, the backlog "
                               "grew by 20 over the window")


def test_a_closed_loop_run_has_no_rate_figures() -> None:
    closed = RunSpec("sqlite", {}, "tpcc", {}, 1, 1.0, 4.0, 1)
    assert rate_figures(closed, [TxnSample(0, "payment", 1.0, 0.1, Outcome.COMMITTED)], Window(1, 5), {}) is None


def test_the_points_never_started_count_in_the_backlog_of_every_second_they_were_due() -> None:
    """The warm-up's until the window's start skips them, the window's own until the run's end."""
    samples = [_sample(1.0 + k / 10, 1.0 + k / 10, 0.005) for k in range(30)]
    facts = {"schedule.warmup_backlog": 7, "schedule.warmup_backlog_at.0": 7,  # due in [0, 1), skipped at 1.5
             "schedule.unstarted": 10, "schedule.unstarted_at.4": 10}  # due in [4, 5), never started
    figures = rate_figures(_spec(), samples, Window(1.5, 5.0), facts)
    assert figures is not None
    assert dict(figures.backlog) == {1: 7, 2: 0, 3: 0, 4: 0, 5: 10}
    assert (figures.backlog_at_start, figures.backlog_at_end, figures.warmup_backlog) == (0, 10, 7)


@pytest.mark.parametrize("arguments, message", [
    (["--rate", "0"], "error: --rate must be a positive number of transactions per second"),
    (["--rate", "nan"], "error: --rate must be a positive number"),
    (["--rate", "10", "--arrivals", "bursty"], "error: --arrivals must be regular or poisson, got 'bursty'"),
])
def test_a_rate_maximus_cannot_schedule_is_one_line(tmp_path: Path, arguments: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "maximus", "run", *arguments, "--workdir", str(tmp_path / "w"),
                           "--results", str(tmp_path / "r.db")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith(message) and len(done.stderr.splitlines()) == 1


def test_a_rate_with_keying_and_think_times_is_one_line_before_anything_is_built(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "maximus", "run", "--rate", "10", "--keying", "-d", "1",
                           "--workdir", str(tmp_path / "w"), "--results", str(tmp_path / "r.db")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == ("error: --rate sets when each transaction starts: the tpcc workload's keying and think "
                           "times would too (leave them off)\n")
    assert not (tmp_path / "w").exists()
