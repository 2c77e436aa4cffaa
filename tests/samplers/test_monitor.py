"""The monitor: its sampling grid, and samplers that fail without failing anything else."""

from __future__ import annotations

import time

import pytest

from maximus.records import Window
from maximus.samplers.base import Reading, Sampler, SamplerUnavailable, SamplingContext
from maximus.samplers.monitor import Monitor, next_tick


class Counting(Sampler):
    """Counts its readings; remembers the context it was opened with."""

    source = "counting"

    def __init__(self) -> None:
        self.reads, self.closed, self.context = 0, 0, None

    def open(self, context: SamplingContext) -> list[str]:
        self.context = context
        return ["cannot see everything here"]

    def read(self) -> list[Reading]:
        self.reads += 1
        return [Reading("reads_total", self.reads, "count", {"k": "v"})]

    def close(self) -> None:
        self.closed += 1


class BreaksOnSecondRead(Counting):
    source = "fragile"

    def read(self) -> list[Reading]:
        if self.reads == 1:
            raise OSError("device vanished")
        return super().read()


class CannotStart(Counting):
    source = "absent"

    def open(self, context: SamplingContext) -> list[str]:
        raise SamplerUnavailable("not on this machine")


def test_ticks_fall_on_a_grid_aligned_with_the_window_start_and_on_its_end() -> None:
    window = Window(2.5, 5.2)
    ticks, t = [], -0.05
    while t < 6.0:
        t = next_tick(t, window, 1.0)
        ticks.append(round(t, 6))
    assert ticks == [0.5, 1.5, 2.5, 3.5, 4.5, 5.2, 5.5, 6.5]


def _run(samplers: list[Sampler], seconds: float = 0.45) -> Monitor:
    monitor = Monitor(samplers, Window(0.1, 0.3), interval_s=0.1)
    monitor.start(time.monotonic(), [11, 12])
    time.sleep(seconds)
    monitor.stop()
    return monitor


def test_samples_carry_time_source_and_labels_and_cover_the_window_edges() -> None:
    counting = Counting()
    monitor = _run([counting])
    mine = [s for s in monitor.samples if s.source == "counting"]
    assert [s.value for s in mine] == list(range(1, len(mine) + 1)) and len(mine) >= 5
    assert mine[0].time < 0.05 and mine[-1].time >= 0.45  # at start and at stop
    assert any(abs(s.time - 0.1) < 0.05 for s in mine) and any(abs(s.time - 0.3) < 0.05 for s in mine)
    assert mine[0].labels == {"k": "v"} and mine[0].unit == "count"
    assert counting.context.groups["client"] == (11, 12) and len(counting.context.groups["driver"]) == 1
    assert counting.closed == 1
    assert monitor.warnings == ["monitoring (counting): cannot see everything here"]
    cost = [s for s in monitor.samples if s.name == "sampling_cpu_seconds_total"]
    assert cost and cost[-1].source == "monitor" and cost[-1].value >= 0


def test_a_sampler_that_raises_becomes_a_warning_and_the_others_go_on() -> None:
    fragile, absent, counting = BreaksOnSecondRead(), CannotStart(), Counting()
    monitor = _run([fragile, absent, counting])
    assert [s.value for s in monitor.samples if s.source == "fragile"] == [1]  # its first reading is kept
    assert fragile.closed == 1 and absent.closed == 1
    assert len([s for s in monitor.samples if s.source == "counting"]) >= 5
    failures = [w for w in monitor.warnings if "the run went on without it" in w]
    assert any("'fragile' failed at t=" in w and "OSError: device vanished" in w for w in failures)
    assert any("'absent' could not start" in w and "not on this machine" in w for w in failures)


def test_stop_is_safe_twice_and_before_start() -> None:
    never_started = Monitor([Counting()], Window(0, 1))
    never_started.stop()
    assert never_started.samples == []
    counting = Counting()
    monitor = _run([counting], seconds=0.0)
    monitor.stop()
    assert counting.closed == 1


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Monitor([], Window(0, 1), interval_s=0)
