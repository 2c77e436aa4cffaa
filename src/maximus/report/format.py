"""Text for estimates, ratios and verdicts, shared by the terminal and the HTML report."""

from __future__ import annotations

import math

from maximus.analysis.compare import Estimate, Ratio
from maximus.analysis.metrics import RunFigures
from maximus.analysis.rate import scheduled
from maximus.records import BandResult, DeviceJob, RunRecord, RunSpec


def estimate_text(value: Estimate, digits: int = 0, scale: float = 1.0) -> str:
    """``mean ± half-width`` (just the mean with one value, ``-`` with none)."""
    if value.n == 0:
        return "-"
    text = f"{value.mean * scale:,.{digits}f}"
    return text if value.n < 2 else f"{text} ± {(value.high - value.mean) * scale:,.{digits}f}"


def ratio_text(ratio: Ratio | None, interval: bool = True, sep: str = " ", digits: int = 1) -> str:
    """A change in percent, with its 95 % interval after ``sep`` when there is one."""
    if ratio is None or math.isnan(ratio.ratio):
        return "-"
    if math.isnan(ratio.low) or not interval:
        return f"{ratio.change_percent:+.1f} %"
    return (f"{ratio.change_percent:+.1f} %{sep}({100 * (ratio.low - 1):+.{digits}f} … "
            f"{100 * (ratio.high - 1):+.{digits}f})")


def verdict_text(ratio: Ratio) -> str:
    """The verdict, with how many repeats would resolve a difference lost in the noise."""
    return ratio.verdict.value + (f" (≈{ratio.repeats_needed} repeats)" if ratio.repeats_needed else "")


def measured_text(record: RunRecord) -> str:
    """``20 s``, or ``6.4 s of 20 s`` for a run stopped before its window's end (``0 s of 20 s``: before it)."""
    planned, measured = record.spec.duration_s, record.window.end - record.window.start
    if measured >= planned - 1e-9:
        return f"{planned:g} s"
    return f"{measured:.1f} s of {planned:g} s" if measured > 0 else f"0 s of {planned:g} s"


def transactions_text(spec: RunSpec) -> str:
    """``server-side`` or ``client-side`` (``-`` for a run stored before Maximus recorded the mode)."""
    mode = spec.options.get("transactions")
    return f"{mode}-side" if mode else "-"


def pacing_text(spec: RunSpec) -> str:
    """``fixed rate 50/s, poisson arrivals`` for a fixed-rate run; "" for a closed-loop one."""
    target = scheduled(spec)
    return f"fixed rate {target[0]:,g}/s, {target[1]} arrivals" if target else ""


def fixed_rate(figures: RunFigures) -> bool:
    """Whether the figures are a fixed-rate run's: its transactions have service times beside their latencies."""
    return any(t.service is not None for t in figures.transactions)


def band_value_text(band: BandResult) -> str:
    """A validity band's value; "-" when there is nothing to measure, or it is not applicable and 0 (the
    remote shares of a one-warehouse run)."""
    if band.value is None or (band.note and not band.value):
        return "-"
    return f"{band.value:.2f}"


def layout_text(record: RunRecord) -> str:
    """The storage layout the run's database was put on, and the time it took to make, apart from the load's;
    '' for the work directory's own file system."""
    layout = record.environment.get("layout")
    if not layout:
        return ""
    throttle = ", ".join(f"{rule.removesuffix('_device')} {value}" for rule, value in layout["throttle"].items())
    throttled = f"; throttled to {throttle} (cgroup v1 blkio)" if throttle else ""
    if layout["filesystem"] == "workdir":
        return f"the work directory's own file system, on {layout['block_device']}{throttled}"
    on = {"loop": f"on a loop device ({layout['block_device']}, direct I/O to a sparse file on the disk under test)",
          "zram": f"on a zram device in memory ({layout['block_device']})"}.get(layout["device"], "in memory")
    return (f"{layout['filesystem']} of {layout['size'] / 2**30:g} GiB {on}, mounted "
            f"{layout['mount_options'] or 'with defaults'}; made in {layout['created_s']:.2f} s, before the "
            f"load{throttled}")


def fraction_text(value: Estimate) -> str:
    """A fraction with its 95 % interval, e.g. "0.84 (0.80–0.88)"; just the fraction with one value, ``-`` with
    none."""
    if value.n == 0 or math.isnan(value.mean):
        return "-"
    return f"{value.mean:.2f}" if value.n < 2 else f"{value.mean:.2f} ({value.low:.2f}–{value.high:.2f})"


def rate_digits(unit: str) -> int:
    """Digits after the point for a rate in ``unit``: whole reads a second, tenths of a MB a second."""
    return 0 if unit.startswith("reads") else 1


def device_job_text(job: DeviceJob) -> str:
    """fio's job in a line, e.g. "randread 8 KiB, 4 jobs, buffered, 512 MiB file"."""
    how = "direct" if job.direct else "mmap" if job.mapped else "buffered"
    return (f"{job.pattern} {job.block_bytes // 1024} KiB, {job.jobs} job{'s' if job.jobs > 1 else ''}, {how}, "
            f"{job.file_bytes / 2**20:,.0f} MiB file")
