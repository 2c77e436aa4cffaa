"""Real FUSE mounts of the power-cut layer over a backing directory of the test's own, each unmounted by its fixture
and checked: nothing of this test stays in /proc/mounts, even when the test fails."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from maximus.durability.mount import FSNAME, PowerCutMount, mounted


@pytest.fixture
def backing(tmp_path: Path) -> Path:
    (tmp_path / "backing").mkdir()
    return tmp_path / "backing"


@pytest.fixture
def mountpoint(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "mnt").mkdir()
    yield tmp_path / "mnt"
    left = [point for point in mounted(FSNAME) if point.startswith(str(tmp_path))]
    assert not left, f"left mounted: {left}"


@pytest.fixture
def layer(backing: Path, mountpoint: Path) -> Iterator[PowerCutMount]:
    with PowerCutMount(backing, mountpoint) as mount:
        yield mount
        if mount.pid is not None:  # still mounted: no handler of the layer failed with a bug of its own
            assert mount.stats()["errors"] == 0
