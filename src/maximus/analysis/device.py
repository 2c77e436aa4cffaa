"""A storage-bound run against its device's own limit: the run's rate as a fraction of what fio's matching job did on
the same file system (``records.DeviceLimit``, stored with the run), with its interval, and what bounds the run.

- **cache-bound**: the data device read less than ``CACHE_LEAK`` of one page per operation (or of the bytes the scans
  asked for): caches served the rest, so the run measured memory, not storage, whatever its ratio to fio.
- **device-bound**: else at least ``DEVICE_BOUND`` of fio's rate: the database gets what the device can give this
  access.
- **CPU-bound**: else, the reads reaching the device: the database's own work between reads (its CPU, or the
  client's) holds it back.

The interval is the batch-means one of the run's per-second series (within-run noise only; fio is one measurement).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from maximus.analysis.compare import Estimate, batch_means, estimate
from maximus.analysis.metrics import RunFigures
from maximus.analysis.monitoring import DiskFigures
from maximus.experiment.plan import Level
from maximus.records import DeviceJob, DeviceLimit, Headline, Window

DEVICE_BOUND = 0.80  # of fio's rate at the matched jobs (issue #43)
CACHE_LEAK = 0.95  # device reads below this share of the reads the run asked for: caches served the rest


@dataclass(frozen=True)
class DeviceComparison:
    limit: DeviceLimit
    unit: str  # "reads/s" or "MB/s"
    database: Estimate  # the run's rate in ``unit``, with its batch-means interval
    device: float  # fio's, in ``unit``
    ratio: Estimate  # database / device
    verdict: str  # device-bound, cache-bound, CPU-bound
    reason: str  # the figures behind the verdict, one line
    disk: DiskFigures | None = None  # what the data device did in the window, beside fio's and the run's rates
    engine_reads_per_s: float | None = None  # the engine's own count of its data file reads in the window

    def text(self) -> str:
        """E.g. "0.84 of fio (0.80-0.88): device-bound"."""
        interval = f" ({self.ratio.low:.2f}-{self.ratio.high:.2f})" if self.ratio.n > 1 else ""
        return f"{self.ratio.mean:.2f} of fio{interval}: {self.verdict}"


def compare_with_device(limit: DeviceLimit, figures: RunFigures, headline: Headline, disk: DiskFigures | None,
                        engine_reads_per_s: float | None = None) -> DeviceComparison:
    """The run of ``figures`` against ``limit``, its verdict judged with the data device's reads (``disk``);
    ``engine_reads_per_s``: the engine's own count of its reads, shown beside the device's."""
    per_second = _headline_per_second(figures.per_second, figures.window)
    job = limit.job
    if job.compared_as == "bytes":
        scale, unit, device = job.bytes_per_completion / 1e6, "MB/s", limit.bytes_per_s / 1e6
    else:
        scale, unit, device = 1.0, "reads/s", limit.iops
    rates = [value * scale for value in batch_means(per_second)]
    database = estimate(rates)
    ratio = estimate([rate / device for rate in rates]) if device > 0 else Estimate(float("nan"), 0, 0, 0)
    verdict, reason = _verdict(ratio.mean, database.mean, unit, job.block_bytes, disk)
    return DeviceComparison(limit, unit, database, device, ratio, verdict, reason, disk, engine_reads_per_s)


def _headline_per_second(per_second: Sequence[tuple[int, int, int]], window: Window) -> list[float]:
    """The headline transaction's completions in each whole second of the measured window."""
    return [float(done) for second, done, _ in per_second if window.start <= second and second + 1 <= window.end]


def _verdict(ratio: float, rate: float, unit: str, block_bytes: int, disk: DiskFigures | None) -> tuple[str, str]:
    """Cache-bound first: a run served from caches can beat fio (whose own reads are the device's) and is no
    measurement of the device whatever its ratio; then device-bound at ``DEVICE_BOUND`` of fio, else CPU-bound."""
    asked = rate * 1e6 if unit == "MB/s" else rate * block_bytes  # bytes/s the run asked of the storage
    read = disk.read_mb_per_s * 1e6 if disk is not None else None
    if read is not None and asked > 0 and read < CACHE_LEAK * asked:
        return "cache-bound", (f"the data device read {read / 1e6:.1f} MB/s of the {asked / 1e6:.1f} MB/s the run "
                               f"asked for ({read / asked:.0%}): caches served the rest")
    unsampled = "" if read is not None else "; the data device was not sampled: a cache is not ruled out"
    if ratio >= DEVICE_BOUND:
        return "device-bound", f"{ratio:.2f} of fio's rate at the matched jobs{unsampled}"
    reaching = f" with the reads reaching the device ({read / 1e6:.1f} MB/s)" if read is not None else unsampled
    return "CPU-bound", f"{ratio:.2f} of fio's rate{reaching}: the work between reads holds it back"


@dataclass(frozen=True)
class DeviceCell:
    """One cell of an experiment (a step at a load level: a client count, and in a rate sweep a rate) against its
    device, over the cell's complete runs: fio measured before every run, so both rates are estimates over the
    repeats, and so is the ratio (each run's own ratio, averaged: every run is held against the fio of its own
    moment)."""

    step: int
    level: Level
    job: DeviceJob  # the first run's (the cell's runs share the step's configuration, so the same job)
    unit: str
    database: Estimate  # the runs' rates in ``unit`` over the repeats
    device: Estimate  # fio's over the repeats
    ratio: Estimate
    verdicts: tuple[str, ...]  # each run's, in the order the runs were stored
    run_ids: tuple[int, ...]

    @property
    def verdict(self) -> str:
        """The runs' verdict when they agree; else each with its count, the most frequent first ("device-bound ×2,
        CPU-bound ×1"): a cell that sits on a boundary says so rather than picking one."""
        counted = Counter(self.verdicts).most_common()
        if len(counted) == 1:
            return counted[0][0]
        return ", ".join(f"{verdict} ×{count}" for verdict, count in counted)


def device_cell(step: int, level: Level, runs: Sequence[tuple[int, DeviceComparison]]) -> DeviceCell | None:
    """The cell of ``runs`` ((run id, its comparison), complete runs only); None without any. A run in another unit
    than the first (a workload whose access changed within the cell) is left out rather than averaged with it."""
    if not runs:
        return None
    unit = runs[0][1].unit
    same = [(run_id, comparison) for run_id, comparison in runs if comparison.unit == unit]
    comparisons = [comparison for _, comparison in same]
    return DeviceCell(step, level, comparisons[0].limit.job, unit,
                      estimate([c.database.mean for c in comparisons]), estimate([c.device for c in comparisons]),
                      estimate([c.ratio.mean for c in comparisons]), tuple(c.verdict for c in comparisons),
                      tuple(run_id for run_id, _ in same))
