"""A run's transaction samples as columns, one array per field: as the run keeps them (``driver.collected``) and
stores them, and as the read side analyses them.

A storage-bound run records about 100,000 samples a second: as one Python object each, a 10-second run's million
took seconds to read and more to count, and a long run's would not fit in memory. As arrays they take 37 bytes
each (45 with the pointers to their error texts, which the run keeps to store them) and are counted by numpy. The
results store keeps these same columns (``sample_columns``), so every figure stays traceable to its samples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from maximus.records import DeferredResult, IntervalHistogram, Outcome, RunStatus, TxnSample, Window

OUTCOMES: tuple[Outcome, ...] = tuple(Outcome)  # ``Samples.outcome`` holds an index into this
CODE_OF_OUTCOME: Mapping[str, int] = {outcome.value: n for n, outcome in enumerate(OUTCOMES)}  # by value or Outcome
COMPLETED = (Outcome.COMMITTED, Outcome.ROLLED_BACK)
# The columns of ``Samples`` in its order, each with its type: the error texts' (object) aside, which the read side
# does not read
COLUMN_TYPES: Mapping[str, type] = {"transaction": np.int32, "terminal": np.int32, "start": np.float64,
                                    "latency": np.float64, "outcome": np.int8, "attempts": np.int32,
                                    "intended": np.float64}
WITH_ERRORS: Mapping[str, type] = {**COLUMN_TYPES, "error": object}  # the run's, which keeps them to store them


@dataclass(frozen=True, eq=False)
class Samples:
    """Samples in the order of their starts; ``transaction`` and ``outcome`` index ``names`` and ``OUTCOMES``, and
    ``intended`` is NaN in a closed-loop run (no intended start)."""

    names: tuple[str, ...]
    transaction: np.ndarray  # int32
    terminal: np.ndarray  # int32
    start: np.ndarray  # float64, seconds from the run's time origin
    latency: np.ndarray  # float64: from the actual start (a fixed-rate run's service time)
    outcome: np.ndarray  # int8
    attempts: np.ndarray  # int32
    intended: np.ndarray  # float64
    # object: each sample's error text, "" for none. None where it was not read: the read side's figures need none
    error: np.ndarray | None = None

    @classmethod
    def of(cls, samples: Iterable[TxnSample]) -> Samples:
        rows = sorted(samples, key=lambda sample: sample.start)
        names = tuple(dict.fromkeys(sample.transaction for sample in rows))
        index = {name: n for n, name in enumerate(names)}
        return cls(names, np.array([index[s.transaction] for s in rows], dtype=np.int32),
                   np.array([s.terminal for s in rows], dtype=np.int32),
                   np.array([s.start for s in rows], dtype=np.float64),
                   np.array([s.latency for s in rows], dtype=np.float64),
                   np.array([CODE_OF_OUTCOME[s.outcome] for s in rows], dtype=np.int8),
                   np.array([s.attempts for s in rows], dtype=np.int32),
                   np.array([np.nan if s.intended is None else s.intended for s in rows], dtype=np.float64),
                   np.array([s.error for s in rows], dtype=object))

    @classmethod
    def empty(cls) -> Samples:
        return cls.of(())

    @classmethod
    def joined(cls, parts: Sequence[Samples]) -> Samples:
        """``parts`` as one, in the order of their starts (of equal starts, the earlier part's first): the samples of
        several client hosts, each with its own names."""
        names = tuple(dict.fromkeys(name for part in parts for name in part.names))
        code = {name: n for n, name in enumerate(names)}
        columns = {name: [getattr(part, name) for part in parts] for name in COLUMN_TYPES}
        columns["transaction"] = [np.array([code[name] for name in part.names] or [0], dtype=np.int32)[
            part.transaction] for part in parts]
        columns["error"] = [part.error if part.error is not None else np.full(len(part), "", dtype=object)
                            for part in parts]
        start = concatenated(columns["start"], np.float64)
        order, columns["start"] = np.argsort(start, kind="stable"), [start]
        return cls(names, **{name: concatenated(columns[name], kind)[order]
                             for name, kind in WITH_ERRORS.items()})

    def __len__(self) -> int:
        return len(self.start)

    def __iter__(self) -> Iterator[TxnSample]:
        """Each sample as the record it was: for a few of them (a sample's test, a short look); the figures read the
        columns."""
        errors = self.error.tolist() if self.error is not None else [""] * len(self)
        for code, terminal, start, latency, outcome, attempts, intended, error in zip(
                self.transaction.tolist(), self.terminal.tolist(), self.start.tolist(), self.latency.tolist(),
                self.outcome.tolist(), self.attempts.tolist(), self.intended.tolist(), errors):
            yield TxnSample(terminal, self.names[code], start, latency, OUTCOMES[outcome], attempts, error,
                            None if intended != intended else intended)  # NaN: no intended start

    @property
    def end(self) -> np.ndarray:
        return self.start + self.latency

    @property
    def timed(self) -> np.ndarray:
        """Which samples have an intended start (a fixed-rate run's)."""
        return ~np.isnan(self.intended)

    def where(self, mask: np.ndarray) -> Samples:
        """The samples ``mask`` selects, in the same order."""
        return Samples(self.names, self.transaction[mask], self.terminal[mask], self.start[mask], self.latency[mask],
                       self.outcome[mask], self.attempts[mask], self.intended[mask],
                       None if self.error is None else self.error[mask])

    def named(self, names: Iterable[str]) -> np.ndarray:
        """Which samples are of one of the transactions ``names``."""
        chosen = set(names)
        codes = [n for n, name in enumerate(self.names) if name in chosen]
        return np.isin(self.transaction, codes)

    def with_outcome(self, *outcomes: Outcome) -> np.ndarray:
        return np.isin(self.outcome, [OUTCOMES.index(outcome) for outcome in outcomes])

    def completed(self) -> np.ndarray:
        return self.with_outcome(*COMPLETED)

    def in_window(self, window: Window) -> np.ndarray:
        """TPC-C 5.4: which samples' whole response times lie inside the window (``Window.holds``)."""
        return (self.start >= window.start) & (self.end <= window.end)

    def counts(self, mask: np.ndarray | None = None) -> dict[str, int]:
        """How many samples (``mask``'s, or all) there are of each transaction, in the order each first started."""
        chosen = self.transaction if mask is None else self.transaction[mask]
        codes, firsts, tally = np.unique(chosen, return_index=True, return_counts=True)
        return {self.names[code]: count for _, code, count in sorted(zip(firsts.tolist(), codes.tolist(),
                                                                         tally.tolist()))}


def concatenated(parts: Sequence[np.ndarray], kind: type) -> np.ndarray:
    """One column of its parts: the part itself when it is the only one, not a copy of it."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype=kind)


def samples_of(samples: Samples | Iterable[TxnSample]) -> Samples:
    """``samples`` as columns: a run's read back from the store, or a driver's in memory."""
    return samples if isinstance(samples, Samples) else Samples.of(samples)


@dataclass(frozen=True)
class RunEnd:
    """A run as it ended: its status and raw samples, stored in one transaction."""

    status: RunStatus
    samples: Samples | Sequence[TxnSample] = ()  # the driver's columns, or records (a test's)
    facts: Mapping[str, int] = field(default_factory=dict)  # the in-window counts behind the validity bands
    errors: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    warnings: tuple[str, ...] = ()
    window: Window | None = None  # replaces the planned one: an interrupted run measured less than it planned
    deferred: Sequence[DeferredResult] = ()
    environment: Mapping[str, object] = field(default_factory=dict)  # read at the end (a memory limit's peak), over
    # the same keys of the environment stored as the run began
    histograms: Sequence[IntervalHistogram] = ()  # the samples' response times (``maximus.histograms``)
