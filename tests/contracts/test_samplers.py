"""The Sampler contract, checked for the samplers of every run: the OS's, and each registered engine's own
(``Engine.samplers``), on a running engine with work done through its sessions."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Iterator

import pytest

from maximus.database import running
from maximus.engines import ENGINES, Engine
from maximus.runs import run_samplers
from maximus.samplers.base import Reading, Sampler, SamplingContext


@pytest.fixture(params=sorted(ENGINES), ids=str)
def engine(request: pytest.FixtureRequest, server_workdir: Path, tmp_path: Path) -> Iterator[Engine]:
    """A running engine with a table to write to, as a run's samplers meet it."""
    engine_class = ENGINES[request.param]
    engine = engine_class(server_workdir if engine_class.capabilities.server_process else tmp_path, "sampled", {})
    with running(engine):
        engine.provision()
        session = engine.connect()
        session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(2000))")
        session.close()
        yield engine
        engine.destroy()


@pytest.fixture
def opened(engine: Engine) -> Iterator[list[tuple[Sampler, list[str]]]]:
    """The run's samplers (the OS's, then the engine's own), each opened as the monitor opens them."""
    samplers = run_samplers(engine)
    context = SamplingContext({"client": (os.getpid(),), "driver": (os.getppid(),)})
    opened = []
    try:
        for sampler in samplers:
            opened.append((sampler, sampler.open(context)))
        yield opened
    finally:
        for sampler, _ in opened:
            sampler.close()


def _work(engine: Engine) -> None:
    """Commits, file writes and some CPU: every counter has a chance to move."""
    session = engine.connect()
    for key in range(20):
        session.begin()
        session.execute("INSERT INTO t (a, b) VALUES (?, ?)", (key, "x" * 2000))
        session.commit()
    session.close()
    sum(i * i for i in range(200_000))


def _check_readings(readings: list[Reading]) -> None:
    assert readings
    for r in readings:
        assert isinstance(r, Reading) and r.name.isidentifier() and isinstance(r.unit, str)
        assert isinstance(r.value, (int, float)) and math.isfinite(r.value), r
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in r.labels.items()), r


def test_open_returns_notes_and_read_returns_well_formed_readings(opened: list[tuple[Sampler, list[str]]]) -> None:
    for sampler, notes in opened:
        assert isinstance(sampler.source, str) and sampler.source
        assert all(isinstance(note, str) for note in notes)
        _check_readings(sampler.read())


def _values(sampler: Sampler) -> dict[tuple, float]:
    return {(r.name, tuple(sorted(r.labels.items()))): r.value for r in sampler.read()}


def test_counters_never_decrease_and_some_move_with_work(opened: list[tuple[Sampler, list[str]]],
                                                         engine: Engine) -> None:
    before = [_values(sampler) for sampler, _ in opened]
    _work(engine)
    for (sampler, _), earlier in zip(opened, before):
        later = _values(sampler)
        counters = [key for key in earlier if key[0].endswith("_total") and key in later]
        assert counters, sampler.source
        assert all(later[key] >= earlier[key] for key in counters), sampler.source
        assert any(later[key] > earlier[key] for key in counters), sampler.source


def test_the_engine_hands_out_fresh_samplers_that_close_without_opening(engine: Engine) -> None:
    first, second = run_samplers(engine), run_samplers(engine)
    assert all(isinstance(s, Sampler) for s in first) and len(first) >= 2  # the OS's and the engine's own
    assert {type(s) for s in first} == {type(s) for s in second}
    assert not set(map(id, first)) & set(map(id, second))  # one run's state never leaks into the next
    for sampler in second:
        sampler.close()
