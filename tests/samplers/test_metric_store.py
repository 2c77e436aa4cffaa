"""Metric samples round-trip through the results store, labels and all, per run."""

from __future__ import annotations

from pathlib import Path

from maximus.records import RunSpec, RunStart, RunStatus
from maximus.records import MetricSample
from maximus.samples import RunEnd
from maximus.store import ResultsStore

SPEC = RunSpec("sqlite", {}, "tpcc", {"warehouses": 1, "keying": False, "mix": "deck"}, 2, 1.0, 4.0, 7,
               database="tpcc-1wh")


def _begin(store: ResultsStore) -> int:
    return store.begin_run(RunStart(SPEC, effective_knobs={}, engine_settings={}, load_seconds=None,
                                    loaded_in_run=False, load_seed=None, constants={}, environment={}))


def test_metric_samples_are_stored_raw_and_read_back_in_time_order(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "r.db")
    first, second = _begin(store), _begin(store)
    samples = [MetricSample(1.0, "os", "disk_reads_total", 12.0, "count", {"device": "vda", "role": "data"}),
               MetricSample(-0.05, "sqlite", "file_bytes", 4096.0, "bytes", {"file": "db"}),
               MetricSample(0.5, "monitor", "sampling_cpu_seconds_total", 0.001, "s")]
    store.add_metric_samples(first, samples)
    store.finish_run(first, RunEnd(RunStatus.COMPLETE, elapsed_s=5.0, warnings=("monitoring: a note",)))
    assert store.metric_samples(first) == sorted(samples, key=lambda s: s.time)
    assert store.metric_samples(second) == []
    assert store.run(first).warnings[-1] == "monitoring: a note"
    store.close()
