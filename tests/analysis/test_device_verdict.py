"""A storage-bound run against fio: the ratio, and what bounds it, from the run's samples, fio's figures and what the
data device read (analysis.device)."""

from __future__ import annotations

import pytest

from maximus.analysis.device import compare_with_device
from maximus.analysis.metrics import run_figures
from maximus.analysis.monitoring import DiskFigures
from maximus.records import DeviceJob, DeviceLimit, Headline, Outcome, TxnSample, Window

HEADLINE = Headline("reads", "reads/s", "reads per second", "read", "reads", "reads/s", "reads per second", "Reads",
                    per_seconds=1)
WINDOW = Window(0.0, 10.0)


def _figures(per_second: int):
    samples = [TxnSample(0, "read", second + n / per_second, 0.0001, Outcome.COMMITTED, 1, "")
               for second in range(10) for n in range(per_second)]
    return run_figures(samples, WINDOW, ("read",), "read", 1)


def _limit(iops: float, compared_as: str = "operations", table_bytes: int = 0) -> DeviceLimit:
    job = DeviceJob("randread" if compared_as == "operations" else "read", 8192, 4, 1 << 30, False,
                    compared_as=compared_as, bytes_per_completion=table_bytes)
    return DeviceLimit(job, "/data", iops, iops * 8192, 100.0, 900.0)


def _disk(read_mb_per_s: float) -> DiskFigures:
    return DiskFigures("vda", read_mb_per_s * 1e6 / 8192, 0.0, read_mb_per_s, 0.0, 0.2, None, 50.0)


@pytest.mark.parametrize("rate, device_mb, verdict", [
    (900, 900 * 8192 / 1e6, "device-bound"),  # 0.90 of fio, every read on the device
    (500, 500 * 8192 / 1e6, "CPU-bound"),  # 0.50 of fio, every read on the device
    (2000, 100 * 8192 / 1e6, "cache-bound"),  # twice fio's rate: the device served a twentieth of the reads
    (900, 0.5 * 900 * 8192 / 1e6, "cache-bound"),  # 0.90 of fio, but half of the reads were cached
])
def test_the_verdict_holds_the_run_against_fio_and_the_device(rate: int, device_mb: float, verdict: str) -> None:
    comparison = compare_with_device(_limit(1000.0), _figures(rate), HEADLINE, _disk(device_mb))
    assert comparison.unit == "reads/s" and comparison.device == 1000.0
    assert comparison.database.mean == pytest.approx(rate)
    assert comparison.ratio.mean == pytest.approx(rate / 1000.0)
    assert comparison.verdict == verdict, comparison.reason


def test_a_scan_is_compared_in_bytes_the_scans_read() -> None:
    table = 64 << 20  # bytes per scan
    comparison = compare_with_device(_limit(10.0, "bytes", table), _figures(2), HEADLINE, _disk(2 * table / 1e6))
    assert comparison.unit == "MB/s" and comparison.database.mean == pytest.approx(2 * table / 1e6)
    assert comparison.ratio.mean == pytest.approx(2 * table / (10.0 * 8192))
