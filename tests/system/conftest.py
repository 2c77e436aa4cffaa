"""What the tests that change the machine share: its knobs to one test at a time, whichever worker runs it."""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

_KNOBS_LOCK = Path(tempfile.gettempdir()) / "maximus-tests-machine-knobs.lock"


@pytest.fixture
def machine_knobs() -> Iterator[None]:
    """The machine's knobs for this test alone: pytest -n runs test files side by side, and a test that compares
    every knob before and after its run would see another file's experiment change one meanwhile."""
    with open(_KNOBS_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
