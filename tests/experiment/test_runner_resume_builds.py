"""What ``experiment resume`` estimates it builds: a layout is made anew by each runner, so a step on one builds its
database again, whether or not its build had run before the experiment stopped."""

from __future__ import annotations

from maximus.experiment.plan import PlannedRun
from maximus.experiment.runner import builds_left

LAYOUTS = {0: {}, 1: {"storage.filesystem": "xfs"}, 2: {"storage.filesystem": "ext4"},
           3: {"storage.read_iops": "100"}}  # a throttle alone: the work directory's disk, nothing made


def _planned(step: int, repeat: int) -> PlannedRun:
    return PlannedRun(f"s{step}/c1/r{repeat}", step, f"step {step}", LAYOUTS[step], 1, repeat, repeat, repeat == 1,
                      f"x-s{step}")


def test_a_step_on_a_layout_builds_again_one_in_the_work_directory_does_not() -> None:
    left = [_planned(0, 2), _planned(1, 2), _planned(1, 3), _planned(2, 1), _planned(2, 2), _planned(3, 2)]
    marked = builds_left(left)
    assert [(run.key, run.build) for run in marked] == [
        ("s0/c1/r2", False),  # its build ran, its pristine copy is in the work directory
        ("s1/c1/r2", True), ("s1/c1/r3", False),  # its build ran on an xfs that is gone: built again, once
        ("s2/c1/r1", True), ("s2/c1/r2", False),  # its build had not run
        ("s3/c1/r2", False),  # a throttle makes no file system
    ]
