"""The device's own limit beside a storage-bound run: fio, on the same file system as the run's data, doing what the
run asks of the device (``Workload.device_job``: the access, the block size, buffered or direct, a synchronous job per
client, a file as large as the data), its JSON kept whole with the run.

fio lays its file out first (written, then its cached pages invalidated, so that its reads are the device's as far as
the page cache lets them be), reads for the job's time, and the file is removed after, whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from maximus.errors import EngineError, UserError
from maximus.records import DeviceJob, DeviceLimit

TIMEOUT_MARGIN_S = 300.0  # beyond the job's own time: laying out a file of gigabytes on a slow disk


def fio_missing() -> str | None:
    """Why fio cannot run here, in one line, or None."""
    return None if shutil.which("fio") else "measuring the device's limit needs fio: apt-get install fio"


def command(job: DeviceJob, file: Path) -> list[str]:
    """The fio command line of ``job`` over ``file``: one synchronous job per client (iodepth 1), the whole file.

    Without advice to the kernel (``--fadvise_hint=0``), as the engines read: fio's default tells the kernel that a
    random job's reads are random (POSIX_FADV_RANDOM), which turns read-ahead off, while PostgreSQL, SQLite and InnoDB
    give no advice, so each page a buffered read misses brings its neighbours with it (measured here: 30 % fewer
    buffered 8 KiB random reads a second under a bounded cache, docs/workloads.md)."""
    engine = "mmap" if job.mapped else "psync"
    return ["fio", "--name=maximus-device-limit", f"--filename={file}", f"--rw={job.pattern}",
            f"--bs={job.block_bytes}", f"--size={job.file_bytes}", f"--numjobs={job.jobs}", f"--ioengine={engine}",
            "--iodepth=1", f"--direct={int(job.direct)}", "--fadvise_hint=0", "--invalidate=1", "--time_based",
            f"--runtime={job.runtime_s:g}", "--group_reporting", "--thread", "--output-format=json"]


def measure(job: DeviceJob, directory: Path, groups: Sequence[Path] = ()) -> DeviceLimit:
    """Run ``job`` on the file system of ``directory``; its figures and fio's JSON. ``groups``: cgroups fio joins
    before it starts (the server's memory limit and throttle, where they are not Maximus's own: fio inherits those),
    so that its reads meet the same cache bound and throttle as the database's. A fio that fails is an
    ``EngineError`` with fio's last line."""
    missing = fio_missing()
    if missing:
        raise UserError(missing)
    file = directory / f".maximus-fio-{os.getpid()}"
    try:
        done = subprocess.run(command(job, file), capture_output=True, text=True,
                              timeout=job.runtime_s + TIMEOUT_MARGIN_S, preexec_fn=_joining(groups))
    except subprocess.TimeoutExpired:
        raise EngineError(f"fio did not finish within {job.runtime_s + TIMEOUT_MARGIN_S:g} s in {directory}") from None
    finally:
        file.unlink(missing_ok=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise EngineError(f"fio failed in {directory}: {lines[-1] if lines else f'exit code {done.returncode}'}")
    return limit_of(job, directory, json.loads(done.stdout[done.stdout.index("{"):]))


def _joining(groups: Sequence[Path]) -> Callable[[], None] | None:
    """What the forked fio does before it runs: join each of ``groups`` (writing 0 moves the writer)."""
    if not groups:
        return None

    def join() -> None:
        for group in groups:
            (group / "cgroup.procs").write_text("0")

    return join


def limit_of(job: DeviceJob, directory: Path, output: Mapping[str, Any]) -> DeviceLimit:
    """The figures of fio's JSON (``--group_reporting``: one job entry for all), reads only."""
    reads = output["jobs"][0]["read"]
    percentiles = reads.get("clat_ns", {}).get("percentile", {})
    return DeviceLimit(job, str(directory), float(reads["iops"]), float(reads["bw_bytes"]),
                       percentiles.get("50.000000", 0) / 1000, percentiles.get("99.000000", 0) / 1000, dict(output))
