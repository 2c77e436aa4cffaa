"""The client hosts' runs made one, the record a run on one machine gives.

Exact, not approximate: every host stamps its samples in seconds from the same origin (the coordinator's start, on
each host's own monotonic clock), so the merged run's raw samples are the hosts' concatenated, and every figure the
read side computes from them (percentiles included) is the one the union of the hosts' samples gives.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain
from typing import Sequence

from maximus.driver.scheduler import DriveResult
from maximus.records import RunStatus, Window
from maximus.samples import Samples

_WORST_LAST = (RunStatus.COMPLETE, RunStatus.INTERRUPTED, RunStatus.FAILED)


def merged(hosts: Sequence[tuple[str, DriveResult]], elapsed_s: float, fault: str | None = None,
           interrupted: bool = False) -> DriveResult:
    """The runs of the named hosts as one: samples concatenated in order of start, facts summed, each error with
    its host named, the worst status, the narrowest window. ``fault``: what the coordinator's watch of the engine
    found (the run's first error); ``interrupted``: the coordinator was stopped (Ctrl-C)."""
    results = [result for _, result in hosts]
    errors = [f"{name}: {error}" for name, result in hosts for error in result.errors]
    facts: Counter[str] = Counter()
    for result in results:
        facts.update(result.facts)
    samples = Samples.joined([result.samples for result in results])
    deferred = sorted(chain.from_iterable(result.deferred for result in results), key=lambda entry: entry.queued)
    status = _worst([result.status for result in results] + [RunStatus.INTERRUPTED] * interrupted
                    + [RunStatus.FAILED] * bool(fault))
    return DriveResult(samples, dict(facts), narrowest([result.window for result in results]), status,
                       [fault, *errors] if fault else errors, elapsed_s, deferred)


def narrowest(windows: Sequence[Window]) -> Window:
    """The time every host measured: a host stopped early (interrupted, or by a fault) cut its window short."""
    start = max(window.start for window in windows)
    return Window(start, max(start, min(window.end for window in windows)))


def _worst(statuses: Sequence[RunStatus]) -> RunStatus:
    return max(statuses, key=_WORST_LAST.index)
