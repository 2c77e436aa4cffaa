"""An experiment's steps are checked as deep as a run's ``-k`` before the first run: a step whose knobs a run would
refuse is one line naming the file, its line and the key, exit code 2, and nothing runs (#44). Before, the baseline
ran, and the step's run was stored failed with exit code 3."""

from __future__ import annotations

from pathlib import Path

import pytest

EXPERIMENT = """name = "mount options"
system_changes = true
clients = [1]
repeats = 1

[workload]
warehouses = 1
warmup = 0
duration = 1

[[steps]]
name = "noatime"
set = {{ "{knob}" = "{value}" }}
"""


@pytest.mark.parametrize(("knob", "value", "refused"), [
    ("storage.mount_options", "noatime", "storage.mount_options: set storage.filesystem too (ext4, xfs, btrfs or "
                                         "tmpfs): Maximus changes no file system it did not make"),
    ("server.nice", "5", "server.nice: sqlite runs no server process of Maximus's here (an embedded engine, or a "
                         "server of yours): use the client.* knobs"),
])
def test_a_step_a_run_would_refuse_is_refused_before_the_baseline_runs(harness, tmp_path: Path, knob: str,
                                                                      value: str, refused: str) -> None:
    alone = harness.run("run", "-k", f"{knob}={value}", "--allow-system-changes", "--workdir", str(tmp_path / "w"),
                        "--results", str(harness.results))
    assert alone.returncode == 2 and harness.one_error(alone.stderr) == f"error: {refused}", alone.stderr
    experiment = tmp_path / "exp.toml"
    experiment.write_text(EXPERIMENT.format(knob=knob, value=value))
    result = harness.run("experiment", "run", str(experiment), "--workdir", str(tmp_path / "w"), "--results",
                         str(harness.results))
    assert result.returncode == 2, result.stderr
    assert harness.one_error(result.stderr) == f"error: {experiment}:13: steps[0].set: {refused}"
    assert not harness.results.exists() and not (tmp_path / "w").exists()
    harness.assert_nothing_left(tmp_path)
