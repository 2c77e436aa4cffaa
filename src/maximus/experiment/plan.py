"""Expands an experiment into its ordered runs: step x client count x repeat, and x rate in a rate sweep. Pure: no
I/O."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from maximus import limits
from maximus.experiment.model import Experiment, LoadPolicy, Order


@dataclass(frozen=True)
class Level:
    """A load level of an experiment: its client count, and in a rate sweep the fixed throughput its runs were asked
    for. A step's runs at one level are repeats of one another; at two levels they are not, whatever their clients."""

    clients: int
    rate: float | None = None  # transactions per second over all terminals; None: closed loop

    @property
    def label(self) -> str:
        """"4" in a closed loop, "4 @ 500/s" in a rate sweep."""
        return str(self.clients) + self._at

    @property
    def long_label(self) -> str:
        """"4 clients" in a closed loop, "4 clients @ 500/s" in a rate sweep."""
        return f"{self.clients} client{'s' if self.clients != 1 else ''}{self._at}"

    @property
    def _at(self) -> str:
        return f" @ {self.rate:,g}/s" if self.rate is not None else ""


def levels(experiment: Experiment) -> tuple[Level, ...]:
    """The experiment's load levels in the plan's order: each client count, and within it each rate of a sweep."""
    return tuple(Level(clients, rate) for clients in experiment.clients for rate in _rates(experiment))


@dataclass(frozen=True)
class PlannedRun:
    key: str  # stable identity within the experiment: "s<step>/c<clients>/r<repeat>", with "q<rate>/" before the
    # repeat in a rate sweep
    step: int
    step_name: str
    knobs: Mapping[str, str]
    clients: int
    repeat: int
    seed: int  # differs per repeat, the same across steps: steps are compared on the same inputs
    build: bool  # this run builds the step's database (and so measures its load time)
    database: str
    rate: float | None = None  # a rate sweep's fixed throughput, transactions per second; None: closed loop

    @property
    def level(self) -> Level:
        return Level(self.clients, self.rate)


def plan(experiment: Experiment) -> list[PlannedRun]:
    runs = [_planned(experiment, step, clients, rate, repeat) for step, clients, rate, repeat in _order(experiment)]
    return _mark_builds(runs)


def planned_runs(experiment: Experiment) -> int:
    """How many runs ``plan`` gives, counted without expanding it."""
    return len(experiment.steps) * len(experiment.clients) * len(_rates(experiment)) * experiment.repeats


def rate_key(rate: float) -> str:
    """The rate as the plan key writes it: as short as it reads back exactly (500.0 -> "500", 12.5 -> "12.5"), so two
    rates never share a key."""
    return repr(float(rate)).removesuffix(".0")


def estimate(experiment: Experiment, scale: int, runs: Sequence[PlannedRun] | None = None) -> limits.Estimate:
    """How long the whole plan takes, found without expanding it; or the planned ``runs`` (what is left). ``scale``:
    how big the workload's database is, in its unit (``Workload.scale``)."""
    if runs is None:
        builds = len(experiment.steps) * (experiment.repeats if experiment.hygiene.load is LoadPolicy.PER_REPEAT
                                          else 1)
        count = planned_runs(experiment)
    else:
        builds, count = sum(run.build for run in runs), len(runs)
    workload = experiment.workload
    planned = limits.estimate(count, builds, workload.warmup_s, workload.duration_s, scale)
    tests = experiment.crash_tests
    if tests is None:
        return planned
    crashes = len(experiment.steps) * len(tests.modes) * tests.crashes  # all of them: a resume skips those stored
    return limits.with_crash_tests(planned, crashes, tests.warmup_s, tests.duration_s, scale)


def _order(experiment: Experiment) -> list[tuple[int, int, float | None, int]]:
    steps, rates, repeats = range(len(experiment.steps)), _rates(experiment), range(1, experiment.repeats + 1)
    if experiment.order is Order.SEQUENTIAL:
        return [(s, c, q, r) for s in steps for c in experiment.clients for q in rates for r in repeats]
    # Interleaved: each repeat visits every step before the next repeat starts, so slow drift of the
    # machine (page cache, thermal, neighbours) lands on every step alike instead of on the last ones.
    return [(s, c, q, r) for r in repeats for c in experiment.clients for q in rates for s in steps]


def _rates(experiment: Experiment) -> tuple[float | None, ...]:
    """The rates the plan sweeps; a closed-loop experiment's one "rate" is None."""
    return experiment.rates or (None,)


def _planned(experiment: Experiment, step: int, clients: int, rate: float | None, repeat: int) -> PlannedRun:
    per_repeat = experiment.hygiene.load is LoadPolicy.PER_REPEAT
    database = f"{_slug(experiment.name)}-s{step}" + (f"-r{repeat}" if per_repeat else "")
    # A closed-loop experiment keeps the keys it had before rate sweeps, so that a stored one resumes as planned
    swept = f"q{rate_key(rate)}/" if rate is not None else ""
    return PlannedRun(f"s{step}/c{clients}/{swept}r{repeat}", step, experiment.steps[step].name,
                      dict(experiment.steps[step].knobs), clients, repeat, experiment.seed + repeat - 1, False,
                      database, rate)


def _mark_builds(runs: list[PlannedRun]) -> list[PlannedRun]:
    """The first run that uses each database builds it; the others restore its pristine copy."""
    seen: set[str] = set()
    marked = []
    for run in runs:
        marked.append(PlannedRun(**{**asdict(run), "build": run.database not in seen}))
        seen.add(run.database)
    return marked


def _slug(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")
    return "-".join(part for part in cleaned.split("-") if part)[:40] or "experiment"


def to_data(runs: list[PlannedRun]) -> list[dict[str, Any]]:
    return [asdict(run) | {"knobs": dict(run.knobs)} for run in runs]


def from_data(data: list[dict[str, Any]]) -> list[PlannedRun]:
    return [PlannedRun(**item) for item in data]
