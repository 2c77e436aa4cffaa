"""The experiment file, as frozen, validated objects."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Mapping

from maximus.records import MAX_FAILED_PERCENT


class Order(StrEnum):
    SEQUENTIAL = "sequential"  # every run of a step, then the next step
    INTERLEAVED = "interleaved"  # round-robin over steps, so machine drift spreads across them


class LoadPolicy(StrEnum):
    PER_STEP = "per-step"  # each step builds its database once, with its own knobs: load time per step
    PER_REPEAT = "per-repeat"  # each step builds again for every repeat: load time gets a confidence interval


@dataclass(frozen=True)
class Step:
    """One configuration: the knobs it sets on top of the previous step (cumulative, like DB1 -> DB7)."""

    name: str
    changes: Mapping[str, str]
    knobs: Mapping[str, str]  # every knob set so far (baseline + changes); the rest keep engine defaults
    multi: bool = False
    replaced: Mapping[str, str] = field(default_factory=dict)  # each changed knob's value before this step


@dataclass(frozen=True)
class Workload:
    name: str = "tpcc"
    settings: Mapping[str, Any] = field(default_factory=dict)  # its own, as it validated them (TPC-C: warehouses, ...)
    warmup_s: float = 5.0
    duration_s: float = 30.0
    max_failed_percent: float = MAX_FAILED_PERCENT  # a run with more failed transactions in its window is failed


@dataclass(frozen=True)
class Hygiene:
    """What happens between runs so that every run starts alike."""

    load: LoadPolicy = LoadPolicy.PER_STEP
    restore: bool = True  # every run starts from the step's pristine copy
    drop_caches: bool = False  # drop the OS page cache before each run (root only)


@dataclass(frozen=True)
class CrashTests:
    """The crash tests run for each step after the experiment's measured runs (``[crashtest]``): its durability beside
    its throughput. ``modes``: "process", "power" or both, each ``crashes`` times; the crash falls between ``warmup``
    and ``warmup + duration`` seconds after the terminals (the experiment's largest client count) start."""

    modes: tuple[str, ...] = ("process",)
    crashes: int = 1
    warmup_s: float = 1.0
    duration_s: float = 5.0


@dataclass(frozen=True)
class Experiment:
    name: str
    engine: str
    steps: tuple[Step, ...]  # steps[0] is the baseline
    clients: tuple[int, ...] = (2,)
    repeats: int = 2
    order: Order = Order.INTERLEAVED
    seed: int = 1
    workload: Workload = field(default_factory=Workload)
    hygiene: Hygiene = field(default_factory=Hygiene)
    description: str = ""
    system_changes: bool = False  # the user allows the operating-system knobs its steps set (as root)
    crash_tests: CrashTests | None = None  # none unless the file asks for them
    # A rate sweep (issue #45): each run at one of these fixed throughputs, transactions per second over all
    # terminals, in the file's order; empty: closed loop, every terminal as busy as the database lets it be
    rates: tuple[float, ...] = ()
    arrivals: str = "regular"  # how a fixed rate's transactions arrive: regular or poisson (driver.schedule)
    # Client hosts: each run's terminals shared over this many nodes of a Ray cluster (driver.hosts), whose address
    # the command gives (--ray), as it is the machine's and not the experiment's; 1: the terminals run here
    hosts: int = 1

    @property
    def baseline(self) -> Step:
        return self.steps[0]


# The entries of an experiment's stored plan that the read side reads: the resolved model (``to_data``) and how its
# runs are read together (``records.WorkloadReading``)
MODEL, READING = "model", "reading"


def to_data(experiment: Experiment) -> dict[str, Any]:
    """The experiment as JSON data: stored with its plan, so that reading its results needs neither its file
    nor the engine that validated it (``from_data``)."""
    return asdict(experiment)


def from_data(data: Mapping[str, Any]) -> Experiment:
    """The experiment ``to_data`` stored, as it was resolved when it was planned."""
    return Experiment(**{**data, "steps": tuple(Step(**step) for step in data["steps"]),
                         "clients": tuple(data["clients"]), "order": Order(data["order"]),
                         "workload": Workload(**data["workload"]),
                         "hygiene": Hygiene(**{**data["hygiene"], "load": LoadPolicy(data["hygiene"]["load"])}),
                         "crash_tests": _crash_tests(data.get("crash_tests")),
                         "rates": tuple(data.get("rates", ()))})  # none stored before rate sweeps


def _crash_tests(data: Mapping[str, Any] | None) -> CrashTests | None:
    return CrashTests(**{**data, "modes": tuple(data["modes"])}) if data else None
