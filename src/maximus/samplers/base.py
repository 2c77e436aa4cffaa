"""The Sampler contract: what the monitor needs from a source of OS or database statistics.

One file per source implements it (``os_linux.py``, ``sqlite.py``; a server engine brings its own
through ``Engine.samplers()``). The ``Monitor`` (``monitor.py``) runs every sampler of a run in one
thread of the parent process, beside the driver.

Contract (checked for every implementation by ``tests/samplers/test_contract.py``):

- ``source`` names the sampler; it is stored with each of its samples ("os", "sqlite").
- ``open(context)`` is called once, in the parent, after the workers are ready and before they are
  released. It returns notes on what this sampler cannot measure here (each becomes a warning of the
  run). It may raise: the run then goes on without this sampler, and the error is a warning.
- ``read()`` returns the current readings. It is called right after ``open``, at every tick, at the
  measured window's edges and once more after the workers have finished, always from the same
  thread, so implementations need not be thread-safe. It must be cheap (the OS sampler takes about
  half a millisecond) and must never block the database: no locks, no transactions.
  If it raises, the monitor records a warning, closes the sampler and keeps its earlier samples.
- ``close()`` releases what ``open`` took. It is called once, also after a failure, and must not raise.
- Readings are raw. A counter is cumulative, never decreases between two readings of one run, and
  its name ends in ``_total`` (its origin is arbitrary: since boot, or since ``open``). A gauge is
  the value at the moment of reading. Nothing is derived here: rates, averages and ratios are
  computed later from the stored samples by ``maximus.analysis.monitoring``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Mapping, NamedTuple


class SamplerUnavailable(Exception):
    """Raised by ``open`` when the sampler cannot work on this machine (e.g. no ``/proc``)."""


class Reading(NamedTuple):
    """What a sampler returns; the monitor adds the time and the source."""

    name: str
    value: float
    unit: str = ""
    labels: Mapping[str, str] = MappingProxyType({})  # read-only: one shared default


@dataclass(frozen=True)
class SamplingContext:
    """What a sampler may need to know about the run it observes.

    ``groups`` maps a process group to its process ids: ``client`` is Maximus's worker processes
    (terminals and deferred workers), ``driver`` the parent process that runs the monitor. A server
    engine's own sampler reports its server processes as the group ``server``; an embedded engine
    has none, since its database work is done inside the client processes.
    """

    groups: Mapping[str, tuple[int, ...]]


class Sampler(ABC):
    """A source of raw statistics, read at a fixed interval during a run (see the module's contract)."""

    source: ClassVar[str]

    def open(self, context: SamplingContext) -> list[str]:
        """Prepare to read; return notes on what cannot be measured here."""
        return []

    @abstractmethod
    def read(self) -> list[Reading]:
        """The current readings: counters cumulative, gauges as they are now."""

    def close(self) -> None:
        """Release what ``open`` took; never raises."""
