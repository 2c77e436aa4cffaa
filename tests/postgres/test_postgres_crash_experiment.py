"""A crash-test experiment on managed PostgreSQL end to end: each step measured, then crashed by a power cut, and its
durability beside its throughput in the step tables, the HTML report and the export. (A SIGKILL of asynchronous commit
loses only the WAL page not yet written, which a kill may miss: tests/durability/test_verdicts.py holds that.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maximus import api, crashtest
from maximus.durability.mount import FSNAME, mounted
from maximus.experiment import runner
from maximus.records import CrashMode, Verdict
from maximus.system.kinds import PowerCutLayer

from observers import Quiet  # tests/observers.py

EXPERIMENT = """\
name = "commit durability"
engine = "postgres"
clients = [2]
repeats = 1
[workload]
warmup = 0.5
duration = 2
[baseline]
wal_writer_delay = "10s"
wal_writer_flush_after = "1GB"
[[steps]]
name = "asynchronous commit"
set = { synchronous_commit = "off" }
[crashtest]
mode = "power"
warmup = 0.5
duration = 1
"""


def test_a_crash_test_experiment_shows_faster_because_it_drops_commits(server_workdir: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Every write not yet synced is dropped at the cut, so the loss is certain: at the default odds a slow machine's
    # one or two pending WAL writes were once all kept, and asynchronous commit came out durable.
    monkeypatch.setattr(crashtest, "PowerCutLayer", lambda weights: PowerCutLayer((0.0, 1.0, 0.0, 0.0)))
    path, results = tmp_path / "experiment.toml", tmp_path / "results.db"
    path.write_text(EXPERIMENT)
    experiment_id = runner.start(path, server_workdir / "crash-work", results, Quiet())
    tests = {record.test.plan_key: record.test for record in api.crash_tests(results, experiment_id)}
    assert sorted(tests) == ["s0/x1", "s1/x1"]
    assert {test.mode for test in tests.values()} == {CrashMode.POWER}
    assert tests["s0/x1"].verdict is Verdict.DURABLE  # synchronous_commit=on
    # off, with the WAL writer asleep for 10 s and for 1 GB of WAL: the commits of the run were not on the disk at the
    # cut
    assert tests["s1/x1"].verdict is Verdict.LOST
    assert "3 x wal_writer_delay (10s)" in tests["s1/x1"].window
    html = (tmp_path / "report.html")
    api.report(experiment_id, output=html, results=results)
    text = html.read_text()
    assert "Durability" in text and "loses commits" in text and "durable (" in text
    document = json.loads(api.export(experiment_id, results=results))
    assert len(document["crash_tests"]) == 2
    assert not [point for point in mounted(FSNAME) if point.startswith(str(server_workdir))]
