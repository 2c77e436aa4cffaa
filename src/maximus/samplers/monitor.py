"""Runs a run's samplers in one thread of the parent process, at a fixed interval.

The driver calls ``start`` once the workers are ready, just before it releases them, and ``stop``
after they have all finished. Readings are taken at ``start``, on a grid of ``interval_s`` aligned on
the measured window's start (so the window's edges are sampling times), at the window's end, and at
``stop``. A failing sampler becomes a warning of the run, never an error: the run goes on.

The monitor also measures itself: ``monitor/sampling_cpu_seconds_total`` is the CPU time its
readings took, so the cost of monitoring is itself recorded with every run.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Sequence

from maximus.records import Window
from maximus.records import MetricSample
from maximus.samplers.base import Sampler, SamplingContext

DEFAULT_INTERVAL_S = 1.0


def next_tick(after: float, window: Window, interval_s: float) -> float:
    """The first sampling time later than ``after``: a grid on the window's start, plus the window's end."""
    steps = math.floor((after - window.start) / interval_s + 1e-9) + 1  # 1e-9: a time on the grid is "done"
    tick = window.start + steps * interval_s
    return window.end if after < window.end < tick else tick


class Monitor:
    """The samplers of one run, their samples, and the warnings their failures left.

    Not reusable: one monitor per run. ``samples`` and ``warnings`` are complete after ``stop``.
    """

    def __init__(self, samplers: Sequence[Sampler], window: Window, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        if interval_s <= 0:
            raise ValueError(f"the sampling interval must be positive, got {interval_s}")
        self.window = window
        self.interval_s = interval_s
        self.samples: list[MetricSample] = []
        self.warnings: list[str] = []
        self._samplers = list(samplers)
        self._active: list[Sampler] = []
        self._origin = 0.0
        self._cpu_s = 0.0
        self._started = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, origin: float, client_pids: Sequence[int]) -> None:
        """Open the samplers, take the first reading, then tick until ``stop``.

        ``origin`` is the run's time origin (``time.monotonic()``); ``client_pids`` are the worker
        processes. A sampler's failure is recorded, never raised.
        """
        self._origin = origin
        context = SamplingContext({"client": tuple(client_pids), "driver": (os.getpid(),)})
        for sampler in self._samplers:
            self._open(sampler, context)
        self._read_all()
        self._started = True
        self._thread = threading.Thread(target=self._tick, name="maximus-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop ticking, take the last reading and close the samplers. Safe to call twice or before ``start``."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        if self._started:
            self._read_all()
        for sampler in self._active:
            self._close(sampler)
        self._active = []

    def keep(self, samples: Sequence[MetricSample]) -> None:
        """Readings taken elsewhere, timed from the same origin (a client host's processes): stored with these."""
        self.samples.extend(samples)

    def _now(self) -> float:
        return time.monotonic() - self._origin

    def _tick(self) -> None:
        after = self._now()
        while True:
            due = next_tick(after, self.window, self.interval_s)
            if self._stopping.wait(max(0.0, due - self._now())):
                return
            self._read_all()
            after = max(due, self._now())  # a slow reading skips missed ticks instead of bunching them

    def _read_all(self) -> None:
        began = time.thread_time()
        for sampler in list(self._active):
            at = self._now()
            try:
                readings = sampler.read()
            except Exception as error:  # a sampler must never end a run: record it and go on without it
                self._drop(sampler, f"failed at t={at:.1f} s and was stopped", error)
                continue
            self.samples.extend(MetricSample(at, sampler.source, name, float(value), unit, dict(labels))
                                for name, value, unit, labels in readings)
        self._cpu_s += time.thread_time() - began
        self.samples.append(MetricSample(self._now(), "monitor", "sampling_cpu_seconds_total", self._cpu_s, "s"))

    def _open(self, sampler: Sampler, context: SamplingContext) -> None:
        try:
            notes = sampler.open(context)
        except Exception as error:  # e.g. SamplerUnavailable: the run goes on without this sampler
            self._drop(sampler, "could not start", error)
            return
        self._active.append(sampler)
        self.warnings.extend(f"monitoring ({sampler.source}): {note}" for note in notes)

    def _drop(self, sampler: Sampler, what: str, error: Exception) -> None:
        self.warnings.append(f"monitoring: sampler {sampler.source!r} {what} ({type(error).__name__}: {error}); "
                             "the run went on without it")
        if sampler in self._active:
            self._active.remove(sampler)
        self._close(sampler)

    def _close(self, sampler: Sampler) -> None:
        try:
            sampler.close()
        except Exception as error:  # the contract says close never raises: still, say so rather than crash
            self.warnings.append(f"monitoring: sampler {sampler.source!r} failed to close "
                                 f"({type(error).__name__}: {error})")
