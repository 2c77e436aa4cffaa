"""What operating-system knobs add to a run: the time to journal, apply and read back every machine knob, and to
put them back, against the 1 s the issue allows; and the time to make (mkfs and mount) and remove each storage
layout, which a run shows apart from its load time (as root; the machine is left as it was). Usage:

    .venv/bin/python bench/os_knobs.py [--repeats 5]
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
            with tempfile.TemporaryDirectory(dir="/var/tmp") as work:
                started = time.perf_counter()
                with system.placed(system.OS.resolve(knobs), Path(work) / "work"):
                    made = time.perf_counter()
                removing.append(time.perf_counter() - made)
                making.append(made - started)
        print(f"layout {name}: make median {1000 * statistics.median(making):.0f} ms, remove "
              f"median {1000 * statistics.median(removing):.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    if os.geteuid() != 0:
        print("run as root: operating-system knobs are changed as root", file=sys.stderr)
        return 2
    data_path = Path(tempfile.gettempdir())
    os.environ[JOURNAL_VARIABLE] = str(Path(tempfile.mkdtemp()) / "journal.json")
    before = system.current_values(data_path)
    asked = {knob.name: _other(knob.name, before[knob.name]) for knob in OS_KNOBS}
    applying, restoring = [], []
    for _ in range(options.repeats):
        started = time.perf_counter()
        with system.applied(asked, data_path, allowed=True):
            applied = time.perf_counter()
        restoring.append(time.perf_counter() - applied)
        applying.append(applied - started)
    assert system.current_values(data_path) == before, "the machine was not put back"
    total = statistics.median(a + r for a, r in zip(applying, restoring))
    print(f"{len(asked)} machine knobs, {options.repeats} repeats: journal + apply + read back median "
          f"{1000 * statistics.median(applying):.0f} ms, put back median {1000 * statistics.median(restoring):.0f} ms")
    print(f"added to a run: {1000 * total:.0f} ms, {total:.2f} of the 1 s allowed "
          f"({'met' if total < 1 else 'NOT met'})")
    _layouts(options.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
