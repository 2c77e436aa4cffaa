"""Environment fingerprint: the machine, kernel and storage a benchmark ran on.

Every run records one, so a result read months later can be trusted and compared: a throughput
change may come from the database, or from a new kernel, another I/O scheduler, a different
filesystem or a changed ``vm.dirty_ratio``. Linux is the supported platform; elsewhere the
``/proc`` and ``/sys`` files are missing and the matching fields are simply empty.

Empty means ``""`` for text fields and ``None`` for numeric ones, never an exception: a missing
detail must not stop a benchmark.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import maximus

# Module-level so tests can point them at a fake tree (or nowhere) with monkeypatch.
PROC = Path("/proc")
SYS = Path("/sys")
OS_RELEASE = Path("/etc/os-release")

FINGERPRINT_VERSION = 1  # bump when a field changes meaning, so old records are read correctly

VM_TUNABLES = (
    "dirty_ratio",
    "dirty_background_ratio",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
    "swappiness",
    "nr_hugepages",
)

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")
_BRACKETED = re.compile(r"\[([^\]]*)\]")


# --- small readers: every one returns an empty value on any OSError -------------------------


def read_text(path: Path) -> str:
    """The file's stripped contents, or "" if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def boot_id() -> str | None:
    """This boot of the machine: a process, mount or device of another boot is gone."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def read_key_values(path: Path, sep: str) -> dict[str, str]:
    """``key<sep>value`` lines (``/proc/cpuinfo``, ``/proc/meminfo``); the first occurrence wins."""
    pairs: dict[str, str] = {}
    for line in read_text(path).splitlines():
        key, found, value = line.partition(sep)
        if found:
            pairs.setdefault(key.strip(), value.strip())
    return pairs


def bracketed(text: str) -> str:
    """The selected entry of a sysfs choice list: ``none [mq-deadline] kyber`` -> ``mq-deadline``."""
    match = _BRACKETED.search(text)
    if match:
        return match.group(1)
    # A file offering a single choice may print it without brackets.
    return text.strip()


def _to_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _to_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# --- host, CPU, memory ----------------------------------------------------------------------


def _os_name() -> str:
    pretty = read_key_values(OS_RELEASE, "=").get("PRETTY_NAME", "")
    # os-release values are shell-quoted; PRETTY_NAME never needs more than stripping the quotes.
    return pretty.strip("\"'") or platform.platform(terse=True)


def host_info() -> dict[str, object]:
    """Hostname, OS, kernel, architecture, Python and Maximus versions."""
    return {
        "hostname": socket.gethostname(),
        "os": _os_name(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "maximus_version": maximus.__version__,
    }


def cpu_info() -> dict[str, object]:
    """CPU model, logical cores, current MHz and the cpufreq governor (when the kernel exposes it)."""
    info = read_key_values(PROC / "cpuinfo", ":")
    # ARM kernels may omit "model name"; fall back to what Python knows rather than nothing.
    model = info.get("model name") or info.get("Processor") or platform.processor()
    governor = SYS / "devices/system/cpu/cpu0/cpufreq/scaling_governor"
    return {
        "model": model,
        "logical_cores": os.cpu_count(),
        "mhz": _to_float(info.get("cpu MHz", "")),
        "governor": read_text(governor),
    }


def _meminfo_bytes(info: dict[str, str], key: str) -> int | None:
    number, _, unit = info.get(key, "").partition(" ")
    value = _to_int(number)
    if value is None:
        return None
    return value * 1024 if unit.strip() == "kB" else value


def memory_info() -> dict[str, object]:
    """Total RAM and swap in bytes."""
    info = read_key_values(PROC / "meminfo", ":")
    return {
        "total_bytes": _meminfo_bytes(info, "MemTotal"),
        "swap_total_bytes": _meminfo_bytes(info, "SwapTotal"),
    }


# --- storage ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/self/mountinfo``, with paths unescaped."""

    major_minor: str
    mount_point: str
    options: str  # per-mount options (rw, relatime, ...)
    fstype: str
    source: str
    super_options: str  # filesystem-wide options


def unescape_mount_path(text: str) -> str:
    """Undo the kernel's octal escapes (``\\040`` space, ``\\011`` tab, ``\\012``, ``\\134``)."""
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo_line(line: str) -> Mount | None:
    """Parse one mountinfo line; None if it is malformed.

    Format: ``id parent major:minor root mount_point options [optional...] - fstype source super``.
    The optional fields vary in number, so the ``-`` separator anchors the second half.
    """
    fields = line.split()
    try:
        dash = fields.index("-", 6)
        fstype, source, super_options = fields[dash + 1 : dash + 4]
    except ValueError:
        return None
    return Mount(
        major_minor=fields[2],
        mount_point=unescape_mount_path(fields[4]),
        options=fields[5],
        fstype=fstype,
        source=unescape_mount_path(source),
        super_options=super_options,
    )


def parse_mountinfo(text: str) -> list[Mount]:
    """All well-formed mounts, in kernel order."""
    mounts = (parse_mountinfo_line(line) for line in text.splitlines())
    return [mount for mount in mounts if mount is not None]


def _is_under(path: str, mount_point: str) -> bool:
    # Compare whole components: /dev must not claim /devices.
    return mount_point == "/" or path == mount_point or path.startswith(mount_point.rstrip("/") + "/")


def find_mount(path: Path, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path``: longest matching mount point; a later line wins a tie."""
    best: Mount | None = None
    for mount in mounts:
        # ">=": a later mount on the same point is stacked on top and hides the earlier one.
        if _is_under(str(path), mount.mount_point) and (
            best is None or len(mount.mount_point) >= len(best.mount_point)
        ):
            best = mount
    return best


def nearest_existing(path: Path) -> Path:
    """``path`` or its closest existing ancestor, absolute with symlinks resolved."""
    candidate = Path(os.path.abspath(path))
    while not candidate.exists() and candidate != candidate.parent:
        candidate = candidate.parent
    return candidate.resolve()


def block_device_dir(major_minor: str) -> Path | None:
    """The sysfs directory of the whole disk behind ``major:minor``; None if not a block device.

    A partition (``vda1``) has no ``queue`` of its own: its scheduler lives on the parent disk.
    """
    try:
        device = (SYS / "dev/block" / major_minor).resolve(strict=True)
    except (OSError, RuntimeError):
        return None  # tmpfs, overlay, NFS...: anonymous device numbers with no sysfs entry
    if (device / "partition").exists():
        device = device.parent
    return device if (device / "queue").is_dir() else None


def queue_info(major_minor: str) -> dict[str, object]:
    """I/O scheduler, rotational flag and read-ahead of the disk behind ``major:minor``."""
    device = block_device_dir(major_minor)
    if device is None:
        return {"block_device": "", "scheduler": "", "rotational": None, "read_ahead_kb": None}
    queue = device / "queue"
    rotational = read_text(queue / "rotational")
    return {
        "block_device": device.name,
        "scheduler": bracketed(read_text(queue / "scheduler")),
        "rotational": None if rotational == "" else rotational == "1",
        "read_ahead_kb": _to_int(read_text(queue / "read_ahead_kb")),
    }


def mount_device(mount: Mount) -> Path | None:
    """The sysfs directory of the disk a mount is on: by its device number, or, where the file system reports an
    anonymous one (btrfs), by its source device's."""
    device = block_device_dir(mount.major_minor)
    if device is None and mount.source.startswith("/dev/"):
        try:
            number = os.stat(mount.source).st_rdev
        except OSError:
            return None
        device = block_device_dir(f"{os.major(number)}:{os.minor(number)}")
    return device


def queue_dir(data_path: Path) -> Path | None:
    """The request queue (``/sys/block/DISK/queue``) of the disk that holds ``data_path``; None if it has none. A
    loop device's is the queue of the disk beneath its backing file: that is where the I/O is scheduled."""
    mount = find_mount(nearest_existing(data_path), parse_mountinfo(read_text(PROC / "self/mountinfo")))
    device = mount_device(mount) if mount else None
    backing = read_text(device / "loop/backing_file") if device else ""
    if backing:
        return queue_dir(Path(backing))
    return SYS / "block" / device.name / "queue" if device else None  # the name users know, not the bus path


def storage_info(data_path: Path) -> dict[str, object]:
    """Where ``data_path`` lives: mount point, filesystem, device, options and disk queue."""
    existing = nearest_existing(data_path)
    mount = find_mount(existing, parse_mountinfo(read_text(PROC / "self/mountinfo")))
    info: dict[str, object] = {
        "data_path": os.path.abspath(data_path),
        "resolved_path": str(existing),
        "mount_point": mount.mount_point if mount else "",
        "fstype": mount.fstype if mount else "",
        "device": mount.source if mount else "",
        "mount_options": mount.options if mount else "",
        "super_options": mount.super_options if mount else "",
    }
    info.update(queue_info(mount.major_minor if mount else ""))
    return info


# --- kernel tunables, engine, whole fingerprint ----------------------------------------------


def kernel_tunables() -> dict[str, object]:
    """The ``vm.*`` writeback and memory settings that shape database I/O, plus THP mode.

    Values are kept as the kernel prints them: they are compared, not computed with.
    """
    tunables: dict[str, object] = {f"vm_{name}": read_text(PROC / "sys/vm" / name) for name in VM_TUNABLES}
    thp = read_text(SYS / "kernel/mm/transparent_hugepage/enabled")
    tunables["transparent_hugepage"] = bracketed(thp) if thp else ""
    return tunables


def fingerprint(data_path: Path, engine_name: str, engine_version: str) -> dict[str, object]:
    """A JSON-serialisable description of the environment a run uses."""
    return {
        "fingerprint_version": FINGERPRINT_VERSION,
        "captured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "host": host_info(),
        "cpu": cpu_info(),
        "memory": memory_info(),
        "storage": storage_info(Path(data_path)),
        "kernel_tunables": kernel_tunables(),
        "engine": {"name": engine_name, "version": engine_version},
    }


# --- terminal rendering -----------------------------------------------------------------------


def _text(value: object) -> str:
    return "unknown" if value in ("", None) else str(value)


def format_bytes(count: object) -> str:
    """Binary units, one decimal: ``25276502016`` -> ``23.5 GiB``."""
    if not isinstance(count, int) or isinstance(count, bool):
        return "unknown"
    if count < 1024:
        return f"{count} B"
    size, unit = float(count), "B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        size /= 1024
        if size < 1024:
            break
    return f"{size:.1f} {unit}"


def _section(fp: dict, name: str) -> dict:
    # Tolerate fingerprints from older versions or hand-edited records with missing sections.
    section = fp.get(name)
    return section if isinstance(section, dict) else {}


def _cpu_row(cpu: dict) -> str:
    text = f"{_text(cpu.get('model'))} × {_text(cpu.get('logical_cores'))}"
    if isinstance(cpu.get("mhz"), (int, float)):
        text += f" @ {cpu['mhz']:.0f} MHz"
    if cpu.get("governor"):
        text += f", governor {cpu['governor']}"
    return text


def _data_directory_row(storage: dict) -> str:
    text = f"{_text(storage.get('data_path'))} on {_text(storage.get('device'))}"
    return text + f" ({_text(storage.get('fstype'))}, {_text(storage.get('mount_options'))})"


def _disk_row(storage: dict) -> str:
    found = storage.get("rotational")
    rotational = "rotational" if found is True else "non-rotational" if found is False else "unknown"
    read_ahead = storage.get("read_ahead_kb")
    ahead = "unknown" if read_ahead is None else f"{read_ahead} KiB"
    return f"{_text(storage.get('block_device'))}, {rotational}, read-ahead {ahead}"


def _host_rows(host: dict, cpu: dict, memory: dict) -> list[tuple[str, str]]:
    total, swap = format_bytes(memory.get("total_bytes")), format_bytes(memory.get("swap_total_bytes"))
    return [
        ("Host", _text(host.get("hostname"))),
        ("OS", _text(host.get("os"))),
        ("Kernel", f"{_text(host.get('kernel'))} ({_text(host.get('machine'))})"),
        ("Python", f"{_text(host.get('python_implementation'))} {_text(host.get('python_version'))}"),
        ("Maximus", _text(host.get("maximus_version"))),
        ("CPU", _cpu_row(cpu)),
        ("Memory", f"{total}, swap {swap}"),
    ]


def _storage_rows(storage: dict) -> list[tuple[str, str]]:
    return [
        ("Data directory", _data_directory_row(storage)),
        ("Mount point", _text(storage.get("mount_point"))),
        ("Disk", _disk_row(storage)),
        ("I/O scheduler", _text(storage.get("scheduler"))),
    ]


def _tunable_rows(vm: dict) -> list[tuple[str, str]]:
    ratio, background = _text(vm.get("vm_dirty_ratio")), _text(vm.get("vm_dirty_background_ratio"))
    expire, writeback = _text(vm.get("vm_dirty_expire_centisecs")), _text(vm.get("vm_dirty_writeback_centisecs"))
    return [
        ("Dirty ratio", f"{ratio} % / background {background} %"),
        ("Dirty expire / writeback", f"{expire} / {writeback} cs"),
        ("Swappiness", _text(vm.get("vm_swappiness"))),
        ("Huge pages", _text(vm.get("vm_nr_hugepages"))),
        ("THP", _text(vm.get("transparent_hugepage"))),
    ]


def describe(fp: dict) -> list[tuple[str, str]]:
    """Human-readable (label, value) rows of a fingerprint, for the terminal; "unknown" when empty."""
    engine = _section(fp, "engine")
    return [
        *_host_rows(_section(fp, "host"), _section(fp, "cpu"), _section(fp, "memory")),
        *_storage_rows(_section(fp, "storage")),
        *_tunable_rows(_section(fp, "kernel_tunables")),
        ("Engine", f"{_text(engine.get('name'))} {_text(engine.get('version'))}"),
        ("Captured at", _text(fp.get("captured_at"))),
    ]
