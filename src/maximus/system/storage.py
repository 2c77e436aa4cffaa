"""Storage layouts: the database on a file system Maximus makes for it, a variable like any knob.

A layout is named by the ``storage.*`` knobs: a file system (ext4, xfs, btrfs, or tmpfs as the no-I/O reference)
made with its mkfs options on a device of Maximus's own (a loop device backed by a file on the disk under test,
or a zram device: a disk at memory speed), mounted with its mount options under the work directory. The run's
database, its pristine copy and a managed server's files all live there, so its load is the layout's load time.
Everything is journaled before it is made (``maximus.system.journal``) and removed after the run, or, in an
experiment, after the last run (its steps share a layout they name alike: ``KeptLayouts``). Maximus formats and
mounts only what it made: the device is one it attached to a file it created, and mkfs runs where no other path is
at hand.

The layout's device (or the work directory's disk) can be throttled: ``maximus.system.throttle``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from maximus import environment
from maximus.errors import EngineError, MaximusError, UserError
from maximus.knobs import Choice, Integer, Size
from maximus.knobs.registry import ValueType
from maximus.system.journal import Attached, Created, Hold, Mounted, Scope, Zram, run_tool

WORKDIR = "workdir"  # no layout: the work directory's own file system, as it is
TMPFS = "tmpfs"  # no device and no mkfs: the no-I/O reference


@dataclass(frozen=True)
class FileSystem:
    """What Maximus needs to know of a file system it makes on a device of its own: one entry of ``FILE_SYSTEMS``
    each, and its mkfs in scripts/system-packages (the tests make every one)."""

    name: str
    block_size: tuple[str, str]  # mkfs's option for the block size, and its value's form ("{}" is the size)
    quiet: tuple[str, ...]  # mkfs's options to make it on Maximus's own device without asking
    copies_in: frozenset[str]  # mkfs's options that copy files in: refused, they would name other files
    commit_s: int | None = None  # its default commit interval (mount option commit=): a longer one loses more
    # Options that make it whole now, unless the user's own mkfs options give the first of them: work that would
    # otherwise be done in the background during the runs
    settled: tuple[str, ...] = ()

    def mkfs_options(self, block_size: str, own: list[str]) -> list[str]:
        settled = list(self.settled) if self.settled and self.settled[0] not in own else []
        flag, form = self.block_size
        return [*self.quiet, *settled, *([flag, form.format(block_size)] if block_size else [])]


FILE_SYSTEMS = {fs.name: fs for fs in (
    FileSystem("ext4", ("-b", "{}"), ("-q", "-F"), frozenset({"-d"}), commit_s=5,
               settled=("-E", "lazy_itable_init=0,lazy_journal_init=0")),
    FileSystem("xfs", ("-b", "size={}"), ("-q", "-f"), frozenset({"-p", "--protofile"})),
    FileSystem("btrfs", ("--sectorsize", "{}"), ("-q", "-f"), frozenset({"-r", "--rootdir"}), commit_s=30),
)}


@dataclass(frozen=True)
class MountOptions:
    """A comma-separated list of mount options (``noatime,data=writeback``)."""

    def parse(self, raw: str) -> str:
        options = [option.strip() for option in raw.split(",") if option.strip()]
        for option in options:
            if not re.fullmatch(r"[A-Za-z0-9_.:+-]+(=[A-Za-z0-9_.:+-]+)?", option):
                raise ValueError(f"{option!r} is not a mount option")
        return ",".join(options)

    def describe(self) -> str:
        return "mount options such as noatime,data=writeback,commit=30"


# what would make mkfs reach past Maximus's own device: an external journal or log named by label or UUID, a
# directory or prototype file to copy in
_NAMES_A_FILE = re.compile(r"(^|[,=])(device|logdev|rtdev|LABEL|UUID|PARTUUID|PARTLABEL)=", re.IGNORECASE)


@dataclass(frozen=True)
class MkfsOptions:
    """Options for mkfs, as a shell would split them; never a path, so no other device can be named."""

    def parse(self, raw: str) -> str:
        try:
            words = shlex.split(raw)
        except ValueError as error:
            raise ValueError(f"cannot split {raw!r}: {error}") from None
        for word in words:
            if "/" in word or not re.fullmatch(r"[A-Za-z0-9_.,:=+^-]+", word) or _NAMES_A_FILE.search(word):
                raise ValueError(f"{word!r} is not an mkfs option or value Maximus passes on (paths, devices and "
                                 "files to copy in are Maximus's own choice)")
        return " ".join(words)

    def describe(self) -> str:
        return "mkfs options such as -I 256 (ext4) or -m crc=0 (xfs)"


@dataclass(frozen=True)
class StorageKnob:
    """One property of a layout, with its advice and what it risks."""

    name: str
    type: ValueType
    default: str
    description: str
    advice: str
    unit: str = ""
    risk: str = ""

    def parse(self, raw: object) -> str:
        try:
            return self.type.parse(str(raw))
        except ValueError as error:
            raise UserError(f"bad value {raw!r} for knob {self.name}: {error}") from None

    def weakens_durability(self, value: str) -> bool:
        return bool(_weakening(self.name, value))


_THROTTLE = ("Reproduces a slower disk on a fast one (the classic articles ran on 7200 RPM disks); buffered writes "
             "the kernel's flusher threads write back are not throttled by cgroup v1.")

STORAGE_KNOBS: tuple[StorageKnob, ...] = (
    StorageKnob("storage.filesystem", Choice((WORKDIR, *FILE_SYSTEMS, TMPFS)), WORKDIR,
                "The file system the database is put on, made for the run; workdir keeps the work directory's own.",
                "Compare file systems with a client sweep each, as the HP study compared I/O subsystems; tmpfs is "
                "the no-I/O reference that bounds what any disk tuning can give.",
                risk="tmpfs loses everything at a restart of the machine"),
    StorageKnob("storage.device", Choice(("loop", "zram")), "loop", "The device the file system is made on: a loop "
                "device backed by a file on the disk under test (the work directory's), or a zram device in memory.",
                "A loop device (direct I/O to its backing file) measures the disk; zram is a disk at memory speed.",
                risk="zram loses everything at a restart of the machine"),
    StorageKnob("storage.size", Size(), str(4 << 30), "The size of the file system (the loop device's backing "
                "file is sparse: it takes only what is written).", "Room for the database and its pristine copy.",
                unit="bytes"),
    StorageKnob("storage.block_size", Choice(("1024", "2048", "4096", "8192", "16384", "32768", "65536")), "",
                "The file system's block size (mkfs -b; btrfs: its sector size); mkfs's default unless set.",
                "Match the database's page size, or measure the step: the classic articles found block size the "
                "largest single gain.", unit="bytes"),
    StorageKnob("storage.mkfs_options", MkfsOptions(), "", "Further options for mkfs.", "ext4 is made with its "
                "inode tables and journal initialised at once (lazy_itable_init=0), so no background thread writes "
                "during the run; say -E to choose otherwise."),
    StorageKnob("storage.mount_options", MountOptions(), "", "Mount options: noatime, relatime, strictatime, "
                "lazytime; ext4's data=ordered|writeback|journal, commit=, barrier=.", "noatime spares a write for "
                "every file read (the classic articles: the load nearly halved, 8 % more throughput).",
                risk="data=writeback, barrier=0/nobarrier and a commit= above 5 s can lose or garble recent data in "
                     "a crash of the machine"),
    StorageKnob("storage.read_iops", Integer(1, 2**31 - 1), "", "Reads per second the database's processes may "
                "issue to the layout's device (cgroup v1 blkio).", _THROTTLE, unit="IOPS"),
    StorageKnob("storage.write_iops", Integer(1, 2**31 - 1), "", "Writes per second the database's processes may "
                "issue to the layout's device.", _THROTTLE, unit="IOPS"),
    StorageKnob("storage.read_bps", Size(), "", "Bytes per second the database's processes may read from the "
                "layout's device.", _THROTTLE, unit="bytes/s"),
    StorageKnob("storage.write_bps", Size(), "", "Bytes per second the database's processes may write to the "
                "layout's device.", _THROTTLE, unit="bytes/s"),
)
STORAGE = {knob.name: knob for knob in STORAGE_KNOBS}
THROTTLES = {"storage.read_iops": "read_iops_device", "storage.write_iops": "write_iops_device",
             "storage.read_bps": "read_bps_device", "storage.write_bps": "write_bps_device"}


def _weakening(name: str, value: str) -> list[str]:
    """What in a storage knob's value weakens durability."""
    if name in ("storage.filesystem", "storage.device"):
        return [value] if value in ("tmpfs", "zram") else []
    if name == "storage.mkfs_options":
        return [word for word in value.split() if "^has_journal" in word]  # ext4 without its journal
    if name != "storage.mount_options":
        return []
    return [option for option in value.split(",") if option in _UNSAFE_OPTIONS]


# mount options that give up durability on any file system (a long commit= only against its own default)
_UNSAFE_OPTIONS = {"data=writeback", "nobarrier", "barrier=0", "journal_async_commit", "noload", "norecovery",
                   "nodatacow", "nodatasum"}


def _long_commit(filesystem: str, mount_options: str) -> list[str]:
    default = FILE_SYSTEMS[filesystem].commit_s if filesystem in FILE_SYSTEMS else None
    return [option for option in mount_options.split(",") if default is not None and option.startswith("commit=")
            and option[7:].isdigit() and int(option[7:]) > default]


@dataclass(frozen=True)
class Layout:
    """The file system a run's database is put on."""

    filesystem: str
    device: str  # loop or zram; "" for tmpfs
    size: int
    block_size: str = ""
    mkfs_options: str = ""
    mount_options: str = ""
    throttle: tuple[tuple[str, str], ...] = ()  # (blkio file, value) pairs

    @classmethod
    def of(cls, settings: Mapping[str, str]) -> Layout | None:
        """The layout the ``storage.*`` knobs among ``settings`` (canonical) name; None for the work directory."""
        chosen = {name: value for name, value in settings.items() if name in STORAGE}
        filesystem = chosen.get("storage.filesystem", WORKDIR)
        throttle = tuple((THROTTLES[name], chosen[name]) for name in THROTTLES if name in chosen)
        if filesystem == WORKDIR:
            placed = sorted(set(chosen) - set(THROTTLES) - {"storage.filesystem"})
            if placed:
                raise UserError(f"{', '.join(placed)}: set storage.filesystem too (ext4, xfs, btrfs or tmpfs): "
                                "Maximus changes no file system it did not make")
            return None if not throttle else cls(WORKDIR, "", 0, throttle=throttle)
        if filesystem == TMPFS and ({"storage.block_size", "storage.mkfs_options", "storage.device",
                                       *THROTTLES} & set(chosen)):
            raise UserError("storage.filesystem=tmpfs is made by no mkfs on no device, and has no device to "
                            "throttle: drop the storage.device, storage.block_size, storage.mkfs_options and "
                            "throttle knobs")
        copying = (FILE_SYSTEMS[filesystem].copies_in if filesystem in FILE_SYSTEMS else frozenset()) & set(
            chosen.get("storage.mkfs_options", "").split())
        if copying:
            raise UserError(f"storage.mkfs_options: {', '.join(sorted(copying))} would copy files into the new file "
                            f"system: Maximus makes {filesystem} empty")
        return cls(filesystem, "" if filesystem == TMPFS else chosen.get("storage.device", "loop"),
                   int(chosen.get("storage.size", STORAGE["storage.size"].default)),
                   chosen.get("storage.block_size", ""), chosen.get("storage.mkfs_options", ""),
                   chosen.get("storage.mount_options", ""), throttle)

    @property
    def mkfs_given(self) -> bool:
        """The user chose how the file system is made (its block size, mkfs's options, its size): what mkfs or the
        kernel refuses of it is their input."""
        return bool(self.block_size or self.mkfs_options or self.size != int(STORAGE["storage.size"].default))

    @property
    def made(self) -> bool:
        """A file system of Maximus's (not only a throttle on the work directory's disk)."""
        return self.filesystem != WORKDIR

    @property
    def name(self) -> str:
        """Short and unique among an experiment's layouts: the mount point's and the backing file's name."""
        digest = hashlib.sha1(repr(self).encode()).hexdigest()[:8]
        return f"{self.filesystem}{'-' + self.device if self.device else ''}-{digest}"

    def mkfs_command(self, device: str) -> list[str]:
        own = shlex.split(self.mkfs_options)
        return [f"mkfs.{self.filesystem}", *FILE_SYSTEMS[self.filesystem].mkfs_options(self.block_size, own), *own,
                device]


@dataclass
class Placement:
    """Where a run's database goes: the work directory, or a layout's mount point, with what was made."""

    workdir: Path
    layout: Layout | None = None
    record: dict = field(default_factory=dict)  # the layout as made, kept with the run (``environment.storage``)
    scope: Scope | None = None  # the layout's: what is made for it is undone with it
    device_number: str = ""  # major:minor of the layout's device (a throttle's rules name it)

    def warnings(self) -> list[str]:
        """The asked mount options the kernel did not put in force."""
        return [f"storage.mount_options: {option} was asked, but the kernel does not list it in force"
                for option in self.record.get("not_taken", [])]



class KeptLayouts:
    """The layouts made for the runs in a block, kept until it ends: an experiment's runs share the layout their steps
    name (steps that differ only in their throttle share the file system), and each step's pristine copy stays on it
    between runs. A run given none keeps its own for itself alone. The journal's ``hold`` is theirs, and every
    change of their runs is recorded in it."""

    def __init__(self) -> None:
        self.hold = Hold()
        self._kept = ExitStack()
        self._made: dict[Layout, Placement] = {}

    def __enter__(self) -> KeptLayouts:
        return self

    def __exit__(self, *error: Any) -> None:
        self._kept.__exit__(*error)  # an undo that fails while an error is on its way is noted, not put in its place

    def make_all(self, settings: Iterable[Mapping[str, str]], workdir: Path) -> None:
        """Every file system the ``settings`` (the OS knobs of an experiment's steps, canonical) name, made now and
        kept: one that mkfs or the kernel refuses stops the experiment before its first run, not after the runs
        before its step."""
        real = Path(os.path.realpath(workdir))
        for chosen in settings:
            layout = Layout.of(chosen)
            if layout is not None and layout.made:
                self.placement(layout, real)

    def placement(self, layout: Layout, workdir: Path) -> Placement:
        """Where a run on ``layout`` puts its database: the layout made now, or the one made for an earlier run."""
        key = replace(layout, throttle=())
        if key not in self._made:
            with ExitStack() as attempt:  # a layout that cannot be made is undone at once, not when the block ends
                scope = attempt.enter_context(attempt.enter_context(self.hold.journal()).scope())
                self._made[key] = _make(key, workdir, scope)
                self._kept.push(attempt.pop_all())
        made = self._made[key]
        return replace(made, layout=layout, record={**made.record, "throttle": dict(layout.throttle)})


@contextmanager
def placed(settings: Mapping[str, str], workdir: Path, layouts: KeptLayouts | None = None) -> Iterator[Placement]:
    """Where a run's database goes for the block: the layout the ``storage.*`` knobs among ``settings`` name, made
    (or the one ``layouts`` kept from an earlier run) and removed after the block (or with ``layouts``); else
    ``workdir`` itself."""
    layout = Layout.of(settings)
    if layout is None:
        yield Placement(Path(workdir))
        return
    real = Path(os.path.realpath(workdir))  # as the kernel lists mounts and backing files: no "..", no symlink
    with ExitStack() as own:
        kept = layouts if layouts is not None else own.enter_context(KeptLayouts())
        yield kept.placement(layout, real)


def _make(layout: Layout, workdir: Path, journal: Scope) -> Placement:
    """The layout made and mounted (the caller's journal scope removes it), timed."""
    began = time.perf_counter()
    if not layout.made:
        return _unmade(layout, workdir, journal)
    home = workdir.absolute() / "storage"
    _refuse_leftovers(home / layout.name, home / f"{layout.name}.img")
    _directory(home, journal)
    if layout.filesystem == TMPFS:
        source, backing = f"maximus-{layout.name}", ""
        options = ",".join(filter(None, [f"size={layout.size}", layout.mount_options]))
    else:
        source, backing = _device(layout, home, journal)
        _mkfs(layout, source)
        options = layout.mount_options
    target = home / layout.name
    _directory(target, journal)
    journal.record(Mounted(str(target), source))
    made = f" (made by {' '.join(layout.mkfs_command(source))})" if layout.device and layout.mkfs_given else ""
    run_tool(["mount", "-t", layout.filesystem, *(["-o", options] if options else []), source, str(target)],
             lambda message: f"cannot mount {layout.filesystem} with {options or 'no options'}{made}: {message}",
             refused=_refusal(bool(layout.mount_options) or layout.mkfs_given))
    _writable(target, layout)
    mount = environment.find_mount(target, environment.parse_mountinfo(Path("/proc/self/mountinfo").read_text()))
    mounted = f"{mount.options},{mount.super_options}" if mount else ""
    on_device = bool(layout.device)
    record = {"filesystem": layout.filesystem, "device": layout.device, "block_device": source if on_device else "",
              "backing_file": backing, "size": layout.size, "block_size": layout.block_size,
              "mkfs": " ".join(layout.mkfs_command(source)) if on_device else "",
              "mount_options": layout.mount_options,
              "mounted_with": mounted, "not_taken": _not_taken(layout.filesystem, layout.mount_options, mounted),
              "mount_point": str(target), "created_s": round(time.perf_counter() - began, 3),
              "throttle": dict(layout.throttle)}
    number = os.stat(source).st_rdev if source.startswith("/dev/") else 0  # btrfs reports an anonymous one
    return Placement(target, layout, record, journal, f"{os.major(number)}:{os.minor(number)}" if number else "")


_LISTED = ("noatime", "relatime", "lazytime", "nodiratime", "sync", "dirsync", "nobarrier", "data=writeback",
           "data=journal")  # what mountinfo lists when it is in force (a default, such as data=ordered, it does not)


def _not_taken(filesystem: str, asked: str, mounted: str) -> list[str]:
    """The asked mount options the kernel does not list as in force (read back from mountinfo)."""
    listed = set(mounted.split(","))
    default_commit = f"commit={FILE_SYSTEMS[filesystem].commit_s if filesystem in FILE_SYSTEMS else None}"
    missing = []
    for option in filter(None, asked.split(",")):
        if option == "strictatime":
            taken = not {"noatime", "relatime"} & listed
        elif option == "barrier=0":
            taken = bool({"nobarrier", "barrier=0"} & listed)
        elif option in _LISTED or (option.startswith("commit=") and option != default_commit):
            taken = option in listed
        else:
            taken = True  # an option mountinfo does not list: the kernel took it, since it mounted
        missing += [] if taken else [option]
    return missing


def _refuse_leftovers(target: Path, backing: Path) -> None:
    """A file system of Maximus's naming still mounted, or its backing file still attached, that no journal knows
    (the journal was deleted by hand, or the machine's state otherwise lost): one line saying how to remove it,
    where a new layout would be mounted over it, its data on two devices."""
    mounts = environment.parse_mountinfo(Path("/proc/self/mountinfo").read_text())
    mounted = [mount for mount in mounts if mount.mount_point == str(target)]
    attached = run_tool(["losetup", "--noheadings", "--output", "NAME", "--associated", str(backing)]).split() \
        if os.path.lexists(backing) else []
    if not mounted and not attached:
        return
    undo = [*([f"umount {target}"] if mounted else []), *(f"losetup -d {device}" for device in attached),
            *([f"rm {backing}"] if os.path.lexists(backing) else [])]
    left = "is still mounted" if mounted else f"has its backing file {backing} still attached"
    raise EngineError(f"{target} {left}, left by a Maximus whose journal of changes is gone (no `maximus system "
                      f"restore` knows it): remove it by hand ({'; '.join(undo)}), then run again")


def _unmade(layout: Layout, workdir: Path, journal: Scope) -> Placement:
    """A throttle on the work directory's own disk, nothing made."""
    mount = environment.find_mount(environment.nearest_existing(workdir),
                                   environment.parse_mountinfo(Path("/proc/self/mountinfo").read_text()))
    disk = environment.mount_device(mount) if mount else None
    if disk is None:
        raise UserError(f"storage throttles: {workdir} is on no disk of its own to throttle (tmpfs, overlay, ...)")
    record = {"filesystem": WORKDIR, "block_device": disk.name, "throttle": dict(layout.throttle)}
    return Placement(Path(workdir), layout, record, journal, (disk / "dev").read_text().strip())


def _directory(path: Path, journal: Scope) -> None:
    """``path`` and the parents it lacks, each journaled: removed after, if empty (a work directory made for the
    layout goes with it; one the run filled stays)."""
    for directory in reversed([path, *path.parents]):
        if not os.path.lexists(directory):
            journal.record(Created(str(directory), directory=True))
            try:
                directory.mkdir()
            except OSError as error:
                journal.forget_last()
                raise UserError(f"cannot make the directory {directory} for the layout: {error.strerror}") from None


def _device(layout: Layout, home: Path, journal: Scope) -> tuple[str, str]:
    """A device of Maximus's own for the layout: the device's path, and its loop device's backing file."""
    if layout.device == "zram":
        return _zram(layout, journal), ""
    backing = home / f"{layout.name}.img"
    free = os.statvfs(home)
    if free.f_bavail * free.f_frsize < layout.size:
        raise UserError(f"storage.size={layout.size} does not fit on the disk under test ({home}: "
                        f"{free.f_bavail * free.f_frsize >> 20} MiB free)")
    if os.path.lexists(backing):
        raise UserError(f"{backing} is in the way of the layout's backing file: remove it")
    journal.record(Created(str(backing)))
    try:
        with open(backing, "x") as file:
            file.truncate(layout.size)  # sparse: only what the file system writes takes room
    except OSError as error:
        raise UserError(f"cannot make the layout's backing file {backing}: {error.strerror}") from None
    for _ in range(5):  # another process may take the free device between the question and the attachment
        device = run_tool(["losetup", "--find"]).strip()
        journal.record(Attached(device, str(backing)))
        try:
            run_tool(["losetup", "--direct-io=on", device, str(backing)])
            return device, str(backing)
        except EngineError as error:
            journal.forget_last()
            last = error
    raise EngineError(f"no loop device could be attached to {backing}: {last}")


def _zram(layout: Layout, journal: Scope) -> str:
    control = Path("/sys/class/zram-control/hot_add")
    if not control.exists():
        raise UserError("storage.device=zram: this kernel has no zram module loaded (modprobe zram)")
    try:
        index = int(control.read_text())  # reading it adds the device
        journal.record(Zram(index, layout.size))
        Path(f"/sys/block/zram{index}/disksize").write_text(str(layout.size))
    except OSError as error:
        raise EngineError(f"storage.device=zram: the kernel refused a zram device of {layout.size} bytes: "
                          f"{error.strerror}") from None
    return f"/dev/zram{index}"


def _mkfs(layout: Layout, device: str) -> None:
    """mkfs on Maximus's own device, from an empty directory so that no word of the options names another file."""
    with tempfile.TemporaryDirectory() as nowhere:
        run_tool(layout.mkfs_command(device), lambda message: f"mkfs.{layout.filesystem} refused the layout "
                 f"({' '.join(layout.mkfs_command(device))}): {message}", cwd=nowhere,
                 refused=_refusal(layout.mkfs_given))


def _refusal(given: bool) -> type[MaximusError]:
    """A system tool's refusal of options the user gave (the layout's knobs) is the user's input, one line and exit
    code 2; with none of theirs it is the system's fault, exit code 3."""
    return UserError if given else EngineError


def _writable(target: Path, layout: Layout) -> None:
    """A layout mounted read-only (``ro`` among its mount options) holds no database: said of the knob, not of a
    directory of the run's that could not be made later."""
    try:
        tempfile.TemporaryFile(dir=target).close()
    except OSError as error:
        raise UserError(f"storage.mount_options={layout.mount_options or '(none)'}: {layout.filesystem} on "
                        f"{target} takes no writes ({error.strerror}), and a run writes its database there") from None


def durability_warnings(settings: Mapping[str, str]) -> list[str]:
    """``name=value weakens durability`` for each storage knob whose value does, on the file system it names."""
    filesystem, options = settings.get("storage.filesystem", WORKDIR), settings.get("storage.mount_options", "")
    return [f"{name}={value} weakens durability" for name, value in settings.items()
            if name in STORAGE and (_weakening(name, value)
                                    or (name == "storage.mount_options" and _long_commit(filesystem, options)))]
