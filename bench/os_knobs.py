"""What operating-system knobs add to a run: the time to journal, apply and read back every machine knob, and to
put them back, against the 1 s the issue allows; and the time to make (mkfs and mount) and remove each storage
layout, which a run shows apart from its load time (as root; the machine is left as it was). Usage:

    .venv/bin/python bench/os_knobs.py [--repeats 5] [--smoke]

--smoke measures everything once, in about a second: it checks that the script still works, and its figures mean
nothing. Every directory it makes is named /tmp/maximus-bench-os-* or /var/tmp/maximus-bench-os-*, and removed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from maximus import system
from maximus.system.journal import JOURNAL_VARIABLE
from maximus.system.knobs import OS_KNOBS

SMOKE_NOTICE = ("smoke mode: the smallest sizes and shortest runs, to check that the script works end to end; "
                "its figures mean nothing")
PREFIX = "maximus-bench-os-"  # of every directory the script makes (the journal's, each layout's)
CANDIDATES = {"vm.nr_hugepages": ("4", "8"), "transparent_hugepage.enabled": ("never", "madvise"),
              "transparent_hugepage.defrag": ("never", "madvise"), "block.scheduler": ("none", "mq-deadline")}


def _other(name: str, now: str) -> str:
    """A value other than ``now`` that the kernel takes: a neighbour for a number, another choice otherwise."""
    if name in CANDIDATES:
        return next(value for value in CANDIDATES[name] if value != now)
    return str(int(now) // 2 if int(now) > 8 else int(now) + 4)


LAYOUTS = {"ext4 on loop, 4 GB": {"storage.filesystem": "ext4"}, "xfs on loop, 4 GB": {"storage.filesystem": "xfs"},
           "btrfs on loop, 4 GB": {"storage.filesystem": "btrfs"}, "tmpfs, 4 GB": {"storage.filesystem": "tmpfs"},
           "ext4 on zram, 1 GB": {"storage.filesystem": "ext4", "storage.device": "zram", "storage.size": "1GB"}}


def _layouts(repeats: int) -> None:
    """Each layout made and removed ``repeats`` times in a directory of the disk under test (/var/tmp)."""
    for name, knobs in LAYOUTS.items():
        making, removing = [], []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix=PREFIX, dir="/var/tmp") as work:
                started = time.perf_counter()
                with system.placed(system.OS.resolve(knobs), Path(work) / "work"):
                    made = time.perf_counter()
                removing.append(time.perf_counter() - made)
                making.append(made - started)
                _check_removed(name, Path(work))
        print(f"layout {name}: make median {1000 * statistics.median(making):.0f} ms, remove "
              f"median {1000 * statistics.median(removing):.0f} ms")


def _check_removed(name: str, work: Path) -> None:
    """Nothing of the layout is left: no mount under ``work``, no loop device backed by a file in it."""
    mount_points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    backing_files = [path.read_text().strip() for path in Path("/sys/block").glob("loop*/loop/backing_file")]
    left = [path for path in mount_points + backing_files if path.startswith(str(work))]
    if left:
        raise SystemExit(f"layout {name} was not removed: {', '.join(left)} left")


def _knobs(repeats: int) -> None:
    """Every machine knob set to another value and put back ``repeats`` times; the machine checked after."""
    data_path = Path(tempfile.gettempdir())
    before = system.current_values(data_path)
    asked = {knob.name: _other(knob.name, before[knob.name]) for knob in OS_KNOBS}
    applying, restoring = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        with system.applied(asked, data_path, allowed=True):
            applied = time.perf_counter()
        restoring.append(time.perf_counter() - applied)
        applying.append(applied - started)
    after = system.current_values(data_path)
    if after != before:
        changed = {name: (value, after[name]) for name, value in before.items() if after[name] != value}
        raise SystemExit(f"the machine was not put back (knob: before, now): {changed}")
    total = statistics.median(a + r for a, r in zip(applying, restoring))
    print(f"{len(asked)} machine knobs, {repeats} repeats: journal + apply + read back median "
          f"{1000 * statistics.median(applying):.0f} ms, put back median {1000 * statistics.median(restoring):.0f} ms")
    print(f"added to a run: {1000 * total:.0f} ms, {total:.2f} of the 1 s allowed "
          f"({'met' if total < 1 else 'NOT met'})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="one repeat: checks that the script works")
    options = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: operating-system knobs are changed as root", file=sys.stderr)
        return 2
    if options.smoke:
        options.repeats = 1
        print(SMOKE_NOTICE)
    # A journal of the script's own, removed with its directory: a Maximus command running beside it keeps its own
    with tempfile.TemporaryDirectory(prefix=PREFIX) as journal_directory:
        os.environ[JOURNAL_VARIABLE] = str(Path(journal_directory) / "journal.json")
        _knobs(options.repeats)
        _layouts(options.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
