"""examples/io-layouts.toml end to end in a short configuration, on a real managed PostgreSQL, as root: io-random on
ext4 and xfs layouts Maximus makes, fio measured before each run on its layout; each step's runs are held against their
own layout's fio, and the report charts both per layout. Nothing stays mounted or attached after it."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from maximus import api
from maximus.experiment import runner
from maximus.system.journal import JOURNAL_VARIABLE

from observers import Quiet  # tests/observers.py


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "io-layouts.toml"


def _short(experiment):
    """One client, one repeat, a 16 MB table and 2-s windows: both layouts, each its build. No memory cgroup: the
    memory limits' own tests count the groups they leave, and fio's joining them is tests/system/test_memory.py's."""
    workload = replace(experiment.workload, settings={**experiment.workload.settings, "table_mb": 16},
                       warmup_s=0.5, duration_s=2.0)
    steps = tuple(replace(step, knobs={k: v for k, v in step.knobs.items() if k != "server.memory"})
                  for step in experiment.steps)
    return replace(experiment, clients=(1,), repeats=1, workload=workload, steps=steps)


def test_the_io_layouts_example_holds_each_layout_against_its_own_fio(server_workdir: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(JOURNAL_VARIABLE, str(tmp_path / "journal.json"))
    results = tmp_path / "results.db"
    attached = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    experiment_id = runner.start(EXAMPLE, server_workdir, results, Quiet(), overrides=_short)
    data = api.show_experiment(experiment_id, results)
    cells = {(step, level.clients): cell for (step, level), cell in data.device.items()}
    assert sorted(cells) == [(0, 1), (1, 1)]
    layouts = [run.report.record.environment["layout"]["filesystem"] for run in data.runs]
    directories = [cell.job for cell in cells.values()]
    assert layouts == ["ext4", "xfs"] and all(job.block_bytes == 8192 and not job.direct for job in directories)
    assert all(cell.unit == "reads/s" and cell.device.mean > 0 and cell.database.mean > 0 for cell in cells.values())
    page = api.report(experiment_id, output=tmp_path / "report.html", results=results).read_text()
    assert 'id="device"' in page and "ext4" in page and "xfs" in page
    assert subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout == attached
    assert not (tmp_path / "journal.json").exists()
