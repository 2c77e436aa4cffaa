"""Experiment files: what is valid loads; every mistake is one line naming file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from maximus.errors import UserError
from maximus.experiment.loader import load_experiment, parse_experiment
from maximus.experiment.model import LoadPolicy, Order

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

GOOD = """\
name = "t"
clients = [1, 2]
repeats = 3
order = "sequential"

[workload]
warehouses = 1
warmup = 1
duration = 2

[baseline]
page_size = 2048

[[steps]]
name = "page size 4K"
set = { page_size = 4096 }

[[steps]]
name = "WAL and normal"
set = { journal_mode = "wal", synchronous = "normal" }
multi = true
"""


def test_a_valid_file_becomes_cumulative_steps() -> None:
    experiment = parse_experiment(GOOD)
    assert [s.name for s in experiment.steps] == ["baseline", "page size 4K", "WAL and normal"]
    assert experiment.steps[1].changes == {"page_size": "4096"}
    assert experiment.steps[2].knobs["page_size"] == "4096"  # cumulative: DB3 keeps DB2's change
    assert experiment.steps[2].knobs["journal_mode"] == "wal"
    assert experiment.steps[2].replaced == {"journal_mode": "delete", "synchronous": "full"}  # engine defaults
    assert "cache_size" not in experiment.steps[2].knobs  # only what the file sets reaches the engine
    assert experiment.clients == (1, 2) and experiment.repeats == 3 and experiment.order is Order.SEQUENTIAL
    assert experiment.hygiene.load is LoadPolicy.PER_STEP and experiment.workload.duration_s == 2.0


def _error(text: str) -> str:
    with pytest.raises(UserError) as caught:
        parse_experiment(text, Path("exp.toml"))
    message = str(caught.value)
    assert "\n" not in message and caught.value.exit_code == 2
    return message


def test_a_step_changing_two_variables_without_multi_is_rejected_with_its_line() -> None:
    text = GOOD.replace("multi = true\n", "")
    assert _error(text) == ("exp.toml:20: steps[1].set: changes 2 variables (journal_mode, synchronous): change "
                            "one variable per step, or mark the step multi = true")


def test_a_step_that_changes_nothing_is_rejected() -> None:
    text = GOOD.replace("set = { page_size = 4096 }", "set = { page_size = 2048 }")
    assert _error(text).startswith("exp.toml:16: steps[0].set.page_size: sets page_size to 2048, which the "
                                   "previous step already has")


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("set = { page_size = 4096 }", "set = { page_sise = 4096 }",
     "exp.toml:16: steps[0].set.page_sise: unknown sqlite knob 'page_sise'; did you mean page_size?"),
    ("set = { page_size = 4096 }", "set = { page_size = 4000 }", "exp.toml:16: steps[0].set.page_size: bad value"),
    ("page_size = 2048", "page_size = 3", "exp.toml:12: baseline.page_size: bad value"),
    ("repeats = 3", "repeats = 0", "exp.toml:3: repeats: expected an integer of at least 1"),
    ("repeats = 3", "repeat = 3", "exp.toml:3: repeat: unknown key; did you mean repeats?"),
    ("clients = [1, 2]", "clients = [1, 1]", "exp.toml:2: clients: a client count appears twice"),
    ("order = \"sequential\"", "order = \"random\"", "exp.toml:4: order: expected one of sequential, interleaved"),
    ("duration = 2", "duration = 0", "exp.toml:9: workload.duration: expected a positive number"),
    ("warmup = 1", "warmpu = 1", "exp.toml:8: workload.warmpu: unknown key; did you mean warmup?"),
    ("name = \"t\"\n", "", "exp.toml:1: name: is required"),
    ("name = \"WAL and normal\"", "name = \"page size 4K\"", "step name 'page size 4K' is used twice"),
    ("multi = true", "multi = \"yes\"", "exp.toml:21: steps[1].multi: expected true or false"),
    ("clients = [1, 2]", "clients = [1, 2]\nengine = \"oracle\"", "exp.toml:3: engine: unknown engine 'oracle'"),
])
def test_mistakes_name_file_line_and_key(old: str, new: str, expected: str) -> None:
    assert old in GOOD
    assert expected in _error(GOOD.replace(old, new, 1))


def test_a_configuration_the_engine_cannot_serve_fails_before_anything_runs() -> None:
    text = GOOD.replace("set = { page_size = 4096 }", "set = { locking_mode = \"exclusive\" }")
    assert "exp.toml:16: steps[0].set: with 2 clients: locking_mode=exclusive lets one connection" in _error(text)


def test_not_toml_is_one_line() -> None:
    assert _error("name = ").startswith("exp.toml: not valid TOML:")


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read experiment file"):
        load_experiment(tmp_path / "nope.toml")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_examples_are_valid(path: Path) -> None:
    experiment = load_experiment(path)  # PostgreSQL knobs are checked against the server's own pg_settings
    assert len(experiment.steps) >= 2
    assert all(len(step.changes) == 1 or step.multi for step in experiment.steps[1:])


def test_a_crashtest_table_asks_for_each_steps_crash_tests() -> None:
    experiment = parse_experiment(GOOD + '[crashtest]\nmode = ["process", "power"]\ncrashes = 3\nduration = 2\n')
    assert experiment.crash_tests is not None
    assert (experiment.crash_tests.modes, experiment.crash_tests.crashes) == (("process", "power"), 3)
    assert (experiment.crash_tests.warmup_s, experiment.crash_tests.duration_s) == (1.0, 2.0)
    assert parse_experiment(GOOD).crash_tests is None
    assert parse_experiment(GOOD + "[crashtest]\n").crash_tests.modes == ("process",)


@pytest.mark.parametrize("table, message", [
    ('mode = "reboot"', r"crashtest\.mode: expected process, power or a list of both, got \['reboot'\]"),
    ('mode = ["power", "power"]', r"crashtest\.mode: expected process, power"),
    ("crashes = 0", r"crashtest\.crashes: expected"),
    ("crash = 2", r"crashtest\.crash: unknown key; did you mean crashes\?"),
])
def test_a_bad_crashtest_table_is_one_line_naming_the_key(table: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_experiment(GOOD + f"[crashtest]\n{table}\n", Path("x.toml"))


def test_a_power_cut_is_refused_for_a_step_on_a_storage_layout() -> None:
    layout = GOOD + '[[steps]]\nname = "xfs"\nset = { "storage.filesystem" = "xfs" }\n'
    with pytest.raises(UserError, match=r"x\.toml:\d+: crashtest\.mode: a power cut stands for the disk itself, but "
                                        r"step 'xfs' puts its database on a storage layout \(storage.filesystem\)"):
        parse_experiment(layout + '[crashtest]\nmode = "power"\n', Path("x.toml"))
    assert parse_experiment(layout + '[crashtest]\nmode = "process"\n').crash_tests is not None


def test_rates_sweep_fixed_throughputs_in_the_files_order() -> None:
    experiment = parse_experiment(GOOD.replace('order = "sequential"', 'order = "sequential"\nrates = [400, 100.5]\n'
                                               'arrivals = "poisson"'))
    assert experiment.rates == (400.0, 100.5) and experiment.arrivals == "poisson"
    closed = parse_experiment(GOOD)
    assert (closed.rates, closed.arrivals) == ((), "regular")


RATES = ("exp.toml:5: rates: expected a list of transactions per second over all terminals such as [100, 200, 400], "
         "each a positive number of transactions per second, at most 1,000,000")


@pytest.mark.parametrize(("lines", "expected"), [
    ("rates = []", RATES),
    ("rates = 100", RATES),
    ("rates = [0, 100]", RATES),
    ("rates = [100, -5]", RATES),
    ("rates = [nan]", RATES),
    ("rates = [2000000]", RATES),
    ('rates = ["100"]', RATES),
    ("rates = [100, 100.0]", "exp.toml:5: rates: a rate appears twice"),
    ('rates = [100]\narrivals = "bursty"', "exp.toml:6: arrivals: expected one of regular, poisson, got 'bursty'"),
    ('arrivals = "poisson"', "exp.toml:5: arrivals: says how a fixed rate's transactions arrive: give the rates too, "
                             "e.g. rates = [100, 200, 400]"),
])
def test_a_bad_rate_sweep_is_one_line_naming_the_key(lines: str, expected: str) -> None:
    assert expected in _error(GOOD.replace('order = "sequential"', f'order = "sequential"\n{lines}'))


def test_a_rate_sweep_with_keying_and_think_times_is_one_line_before_anything_runs() -> None:
    text = GOOD.replace('order = "sequential"', 'order = "sequential"\nrates = [100]').replace(
        "warehouses = 1", "warehouses = 1\nkeying = true")
    assert _error(text) == ("exp.toml:5: rates: a fixed rate sets when each transaction starts: the tpcc workload's "
                            "keying and think times would too (leave them off)")


def test_the_rates_count_in_the_plans_size() -> None:
    text = GOOD.replace("repeats = 3", "repeats = 1000").replace('order = "sequential"',
                                                                  'order = "sequential"\nrates = [1, 2]')
    assert _error(text) == ("exp.toml:3: repeats: 3 configuration(s) × 2 client count(s) × 2 rate(s) × 1000 repeats "
                            "make 12,000 runs, more than the 10,000 an experiment may plan")
    assert parse_experiment(GOOD.replace("repeats = 3", "repeats = 1000")).repeats == 1000  # 6,000 runs without
