"""examples/mariadb-low-hanging-fruit.toml end to end in a short configuration, on a real managed server: its first
two steps (4K and 8K pages) and its last, which has 16K pages and carries every change of the DB1 -> DB7
progression (steps are cumulative); each step's knobs are the server's for its run. Each step builds its database
(the load time is a figure of every step), about 10 s at 1 warehouse: the steps between are left out for the
suite's time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from maximus import api
from maximus.experiment import runner
from maximus.records import RunStatus

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mariadb-low-hanging-fruit.toml"


class Quiet:
    def run_starting(self, position, total, planned):
        return None

    def run_finished(self, planned, run_id, error):
        assert error is None, (planned.key, error)

    def note(self, message):
        pass


def _short(experiment):
    """One client, one repeat, 1 warehouse and a 1-s window; the first two steps (4K and 8K pages) and the last,
    which has 16K pages with every other change."""
    workload = replace(experiment.workload, settings={**experiment.workload.settings, "warehouses": 1},
                       warmup_s=0.0, duration_s=1.0)
    steps = (*experiment.steps[:2], experiment.steps[-1])
    return replace(experiment, clients=(1,), repeats=1, workload=workload, steps=steps)


def test_the_mariadb_example_runs_every_step_with_its_knobs(server_workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    experiment_id = runner.start(EXAMPLE, server_workdir, results, Quiet(), overrides=_short)
    store = api.open_results(results)
    try:
        runs = store.runs(experiment_id)
    finally:
        store.close()
    assert len(runs) == 3 and {run.status for run in runs} == {RunStatus.COMPLETE}
    assert [run.engine_settings["innodb_page_size"] for run in runs] == ["4096", "8192", "16384"]
    first, last = runs[0].engine_settings, runs[-1].engine_settings
    assert (first["innodb_flush_method"], first["innodb_use_native_aio"], first["innodb_read_io_threads"]) == \
        ("fsync", "OFF", "4")
    assert (last["innodb_flush_method"], last["innodb_use_native_aio"], last["innodb_read_io_threads"],
            last["innodb_write_io_threads"]) == ("O_DIRECT", "ON", "8", "8")
    assert int(last["innodb_buffer_pool_size"]) == 1 << 30 and int(last["innodb_log_file_size"]) == 1 << 30
    assert int(last["innodb_log_buffer_size"]) == 64 << 20
