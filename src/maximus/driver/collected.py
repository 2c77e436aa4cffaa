"""A run's samples as they arrive from its workers (or from a client host's stream), kept as columns.

A storage-bound run records about 100,000 transactions a second. Kept as they travelled (a tuple, or a run's names
and times) and made a ``TxnSample`` each at the end, a sample cost about 320 bytes at the run's peak: a 10-minute
run would have needed 20 GB. Here they become numpy columns (``maximus.samples.Samples``, 45 bytes a sample) at the
end, and already during the run once those waiting as they travelled would take ``COMPACT_AT_BYTES``: a run of
millions of samples pays its columns' memory and a bounded rest, and a shorter one pays nothing during its window
for what it keeps (``bench/run_memory.py``).
"""

from __future__ import annotations

import gc
import math
from itertools import chain
from typing import Iterable

import numpy as np

from maximus.records import Outcome
from maximus.samples import CODE_OF_OUTCOME, OUTCOMES, WITH_ERRORS, Samples, concatenated

COMPACT_AT_BYTES = 256 << 20  # of samples waiting as they travelled, about: made columns then, during the run
# What a sample waiting as it travelled takes, about (bench/run_memory.py): a tuple of its own, or a name and two
# times of a run
_TUPLE_BYTES, _RUN_SAMPLE_BYTES = 320, 40
_TUPLE_SLICE = 65_536
_COMMITTED = OUTCOMES.index(Outcome.COMMITTED)


class Collected:
    """The samples of one run so far: whole columns, and the last arrivals as they travelled (``terminal.Recorder``:
    a sample's tuple, or a run of transactions committed at their first attempt)."""

    def __init__(self) -> None:
        self._names: dict[str, int] = {}
        # columns made so far, a dict of them at a time: the tuples' before the runs', as the samples were ordered
        # before, where two start at the same time
        self._made: tuple[list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]] = ([], [])
        self._tuples: list[tuple] = []
        self._runs: list[tuple] = []
        self._waiting = 0
        self._origin = 0.0

    def add(self, samples: list[tuple], runs: list[tuple], origin: float) -> None:
        """A batch as it travelled; a run's times are on the monotonic clock whose time origin is ``origin``."""
        self._tuples += samples
        self._runs += runs
        if runs:  # a host's takes before its release have none, and no origin yet
            self._origin = origin
        self._waiting += len(samples) * _TUPLE_BYTES
        for _, names, _ in runs:
            self._waiting += len(names) * _RUN_SAMPLE_BYTES
        if self._waiting >= COMPACT_AT_BYTES:
            self._compact()

    @property
    def waiting_bytes(self) -> int:
        """About what the samples waiting as they travelled take."""
        return self._waiting

    def samples(self) -> Samples:
        """Every sample collected, in the order of their starts, as columns; what was collected is handed over: the
        collector is empty again. Column by column, so that the peak is the columns and one more."""
        self._compact()
        made, self._made = [*self._made[0], *self._made[1]], ([], [])
        columns = {name: [chunk.pop(name) for chunk in made] for name in WITH_ERRORS}
        del made
        start = concatenated(columns.pop("start"), np.float64)
        order = np.argsort(start, kind="stable")
        ordered = {"start": start[order]}
        del start
        for name, kind in WITH_ERRORS.items():
            if name != "start":
                ordered[name] = concatenated(columns.pop(name), kind)[order]
        names, self._names = tuple(self._names), {}
        return Samples(names, **ordered)

    def _compact(self) -> None:
        """The samples waiting as they travelled, made columns. Tuples a slice at a time, and without the garbage
        collector, which makes no cycle here: each halves what it costs (0.6 µs a tuple as one slice of 800,000
        with the collector, 0.3 µs in slices of 65,536 without).

        A second Ctrl-C raises wherever this process is (``scheduler.Run``), and the run is stored all the same: so
        the columns are made aside and kept, and the waiting samples let go, in one statement, which no signal's
        handler interrupts (it calls nothing, and the collector, whose finalizers could, is off). Interrupted before
        it, the samples wait as they did."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            tuples = [self._tuple_columns(self._tuples[first:first + _TUPLE_SLICE])
                      for first in range(0, len(self._tuples), _TUPLE_SLICE)]
            runs = [self._run_columns()] if self._runs else []
            self._made, self._tuples, self._runs, self._waiting = \
                (self._made[0] + tuples, self._made[1] + runs), [], [], 0
        finally:
            if collecting:
                gc.enable()

    def _codes(self, names: Iterable[str], count: int) -> np.ndarray:
        """The transactions' numbers, a new name numbered as it is first met."""
        names = list(names)
        try:
            return np.fromiter(map(self._names.__getitem__, names), np.int32, count)
        except KeyError:  # a name not met before: rare, so not looked for in every batch
            for name in dict.fromkeys(names):
                self._names.setdefault(name, len(self._names))
            return np.fromiter(map(self._names.__getitem__, names), np.int32, count)

    def _tuple_columns(self, tuples: list[tuple]) -> dict[str, np.ndarray]:
        terminal, transaction, start, latency, outcome, attempts, error, intended = zip(*tuples)
        return {"transaction": self._codes(transaction, len(transaction)),
                "terminal": np.array(terminal, dtype=np.int32), "start": np.array(start, dtype=np.float64),
                "latency": np.array(latency, dtype=np.float64),
                "outcome": np.fromiter(map(CODE_OF_OUTCOME.__getitem__, outcome), np.int8, len(outcome)),
                "attempts": np.array(attempts, dtype=np.int32),
                "intended": np.array([math.nan if at is None else at for at in intended], dtype=np.float64),
                "error": np.array(error, dtype=object)}

    def _run_columns(self) -> dict[str, np.ndarray]:
        """A run's samples: ``names[n]`` started at ``times[2 n]`` and finished at ``times[2 n + 1]``."""
        sizes = [len(names) for _, names, _ in self._runs]
        count = sum(sizes)
        times = np.concatenate([np.asarray(times, dtype=np.float64) for _, _, times in self._runs])
        started, finished = times[0::2], times[1::2]
        names = chain.from_iterable(names for _, names, _ in self._runs)
        return {"transaction": self._codes(names, count),
                "terminal": np.repeat(np.array([terminal for terminal, _, _ in self._runs], dtype=np.int32), sizes),
                "start": started - self._origin, "latency": finished - started,
                "outcome": np.full(count, _COMMITTED, dtype=np.int8), "attempts": np.ones(count, dtype=np.int32),
                "intended": np.full(count, math.nan), "error": np.full(count, "", dtype=object)}
