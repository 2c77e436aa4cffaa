"""Plan expansion: step x clients x repeat, the two orders, and which run builds each database."""

from __future__ import annotations

from dataclasses import asdict

from maximus.experiment.loader import parse_experiment
from maximus.experiment.model import from_data as model_from_data
from maximus.experiment.model import to_data as model_to_data
from maximus.experiment.plan import Level, estimate, from_data, levels, plan, rate_key, to_data

TEXT = """\
name = "Plan Test!"
clients = [1, 4]
repeats = 2
order = "{order}"
[hygiene]
load = "{load}"
[[steps]]
name = "wal"
set = {{ journal_mode = "wal" }}
"""


def _plan(order: str = "interleaved", load: str = "per-step", rates: str = ""):
    return plan(parse_experiment(rates + TEXT.format(order=order, load=load)))


def test_sequential_order_runs_each_step_to_the_end() -> None:
    keys = [run.key for run in _plan("sequential")]
    assert keys == ["s0/c1/r1", "s0/c1/r2", "s0/c4/r1", "s0/c4/r2",
                    "s1/c1/r1", "s1/c1/r2", "s1/c4/r1", "s1/c4/r2"]


def test_interleaved_order_visits_every_step_within_each_repeat() -> None:
    keys = [run.key for run in _plan("interleaved")]
    assert keys == ["s0/c1/r1", "s1/c1/r1", "s0/c4/r1", "s1/c4/r1",
                    "s0/c1/r2", "s1/c1/r2", "s0/c4/r2", "s1/c4/r2"]


def test_every_run_is_planned_once_with_its_configuration() -> None:
    runs = _plan()
    assert len({run.key for run in runs}) == len(runs) == 2 * 2 * 2
    assert {run.knobs["journal_mode"] for run in runs if run.step == 1} == {"wal"}
    assert {run.knobs.get("journal_mode") for run in runs if run.step == 0} == {None}  # not set: engine default
    assert {run.seed for run in runs if run.repeat == 2} == {2}  # same inputs for every step of a repeat


def test_per_step_builds_once_per_step_and_per_repeat_once_per_repeat() -> None:
    per_step = _plan(load="per-step")
    assert [run.key for run in per_step if run.build] == ["s0/c1/r1", "s1/c1/r1"]
    assert {run.database for run in per_step} == {"plan-test-s0", "plan-test-s1"}
    per_repeat = _plan(load="per-repeat")
    assert [run.key for run in per_repeat if run.build] == ["s0/c1/r1", "s1/c1/r1", "s0/c1/r2", "s1/c1/r2"]


def test_plan_round_trips_through_stored_data() -> None:
    runs = _plan()
    assert from_data(to_data(runs)) == runs


def test_the_estimate_counts_each_steps_crash_tests() -> None:
    text = ('name = "e"\nrepeats = 1\n[workload]\nwarmup = 1\nduration = 2\n[[steps]]\nname = "wal"\n'
            'set = { journal_mode = "wal" }\n')
    without = estimate(parse_experiment(text), 1)
    crashed = estimate(parse_experiment(text + '[crashtest]\nmode = ["process", "power"]\ncrashes = 3\n'), 1)
    assert (without.crash_tests, crashed.crash_tests) == (0, 12)  # 2 steps x 2 modes x 3
    assert crashed.seconds > without.seconds and "12 crash tests of about" in crashed.text()


def test_a_rate_sweep_plans_each_rate_between_client_count_and_repeat_in_the_files_order() -> None:
    keys = [run.key for run in _plan("sequential", rates="rates = [500, 12.5]\n") if run.step == 0]
    assert keys == ["s0/c1/q500/r1", "s0/c1/q500/r2", "s0/c1/q12.5/r1", "s0/c1/q12.5/r2",
                    "s0/c4/q500/r1", "s0/c4/q500/r2", "s0/c4/q12.5/r1", "s0/c4/q12.5/r2"]
    interleaved = _plan(rates="rates = [500, 12.5]\n")
    assert [run.key for run in interleaved[:5]] == ["s0/c1/q500/r1", "s1/c1/q500/r1", "s0/c1/q12.5/r1",
                                                    "s1/c1/q12.5/r1", "s0/c4/q500/r1"]
    assert {(run.key.split("/")[2], run.rate) for run in interleaved} == {("q500", 500.0), ("q12.5", 12.5)}
    assert [run.key for run in interleaved if run.build] == ["s0/c1/q500/r1", "s1/c1/q500/r1"]


def test_closed_loop_runs_have_no_rate_and_their_keys_of_before() -> None:
    assert {run.rate for run in _plan()} == {None}
    assert all(run.key.count("/") == 2 for run in _plan())


def test_a_sweeps_levels_are_each_client_count_at_each_rate_in_the_plans_order() -> None:
    swept = parse_experiment("rates = [500, 12.5]\n" + TEXT.format(order="interleaved", load="per-step"))
    assert levels(swept) == (Level(1, 500.0), Level(1, 12.5), Level(4, 500.0), Level(4, 12.5))
    assert list(dict.fromkeys(run.level for run in plan(swept))) == list(levels(swept))
    closed = parse_experiment(TEXT.format(order="interleaved", load="per-step"))
    assert levels(closed) == (Level(1), Level(4)) and {run.level for run in plan(closed)} == {Level(1), Level(4)}


def test_a_level_is_labelled_by_its_clients_and_in_a_sweep_its_rate() -> None:
    assert (Level(4).label, Level(1).long_label, Level(4).long_label) == ("4", "1 client", "4 clients")
    assert (Level(4, 500.0).label, Level(1, 12.5).long_label) == ("4 @ 500/s", "1 client @ 12.5/s")
    assert Level(16, 2000.0).long_label == "16 clients @ 2,000/s"


def test_a_rate_key_reads_back_exactly() -> None:
    assert [rate_key(rate) for rate in (500.0, 12.5, 123456.7, 123457.0, 0.001)] == \
        ["500", "12.5", "123456.7", "123457", "0.001"]


def test_the_estimate_counts_every_rate() -> None:
    swept = parse_experiment("rates = [10, 20, 40]\n" + TEXT.format(order="interleaved", load="per-step"))
    closed = parse_experiment(TEXT.format(order="interleaved", load="per-step"))
    assert (estimate(swept, 1).runs, estimate(closed, 1).runs, len(plan(swept))) == (24, 8, 24)


def test_a_rate_sweeps_plan_and_model_round_trip_and_older_ones_still_load() -> None:
    experiment = parse_experiment('rates = [10, 20]\narrivals = "poisson"\n' +
                                  TEXT.format(order="interleaved", load="per-step"))
    runs = plan(experiment)
    assert from_data(to_data(runs)) == runs
    assert model_from_data(model_to_data(experiment)) == experiment
    older = [{key: value for key, value in asdict(run).items() if key != "rate"} for run in _plan()]
    assert {run.rate for run in from_data(older)} == {None}  # stored before rate sweeps
    model = {key: value for key, value in model_to_data(experiment).items() if key not in ("rates", "arrivals")}
    assert (model_from_data(model).rates, model_from_data(model).arrivals) == ((), "regular")
