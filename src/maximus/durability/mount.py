"""The power-cut layer for the rest of Maximus, without importing FUSE: a context manager that mounts a backing
directory through the power-cut file system (a process of its own), cuts, mounts again, and always unmounts::

    with PowerCutMount(backing, mountpoint) as mount:
        ...  # the database's files under mount.mountpoint; stop the server before or right after the cut
        report = mount.cut(seed)  # the crash state is in the backing directory, mounted again
    # unmounted here, whatever happened, and checked
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Callable

from maximus.errors import MaximusError

FSNAME = "maximus-powercut"  # how /proc/mounts names the layer's mounts
START_TIMEOUT_S = 15.0
EXIT_TIMEOUT_S = 5.0
CUT_TIMEOUT_S = 120.0  # a cut rewrites every pending page: seconds for hundreds of MB


class PowerCutError(MaximusError):
    """The layer could not mount, answer or unmount."""

    exit_code = 3


@dataclass(frozen=True)
class CutEntry:
    """One pending change and its fate at the cut: ``kind`` is write, truncate or a directory change."""

    seq: int
    kind: str
    file: str
    fate: str  # kept, dropped or garbled
    offset: int | None = None
    length: int | None = None
    size: int | None = None  # a truncation's


@dataclass(frozen=True)
class CutReport:
    seed: int
    entries: tuple[CutEntry, ...]

    @classmethod
    def from_answer(cls, answer: dict[str, Any]) -> CutReport:
        return cls(answer["seed"], tuple(CutEntry(**entry) for entry in answer["entries"]))

    def count(self, fate: str, data: bool) -> int:
        """How many data changes (writes, truncations) or directory changes met ``fate``."""
        return sum(1 for entry in self.entries
                   if entry.fate == fate and (entry.kind in ("write", "truncate")) == data)

    def summary(self) -> str:
        torn = self.count("torn", True)
        return (f"seed {self.seed}: data changes {self.count('kept', True)} kept, {self.count('dropped', True)} "
                f"dropped, {self.count('garbled', True)} garbled{f', {torn} torn' if torn else ''}; directory changes "
                f"{self.count('kept', False)} kept, {self.count('dropped', False)} dropped")


class PowerCutMount:
    """``backing`` mounted at ``mountpoint`` through the power-cut file system, while inside the ``with``."""

    def __init__(self, backing: Path, mountpoint: Path, weights: tuple[float, ...] = (1.0, 1.0, 1.0),
                 on_mount: Callable[[int, Path], None] | None = None) -> None:
        self.backing, self.mountpoint = Path(backing).resolve(), Path(mountpoint).resolve()
        self.weights = weights
        # told at each mount the file system's pid and its private directory (control socket, log): what a journal
        # must end and remove after a SIGKILL of Maximus, which leaves both behind
        self.on_mount = on_mount
        self._process: subprocess.Popen[bytes] | None = None
        self._private: Path | None = None

    def __enter__(self) -> PowerCutMount:
        self.mount()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.unmount()

    def mount(self) -> None:
        if is_mounted(self.mountpoint):
            raise PowerCutError(f"{self.mountpoint} is already a mount point")
        self._private = Path(tempfile.mkdtemp(prefix="maximus-powercut-"))  # 0700: the control socket's home
        with open(self._private / "log", "wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "maximus.durability.powercut", str(self.backing), str(self.mountpoint),
                 "--control", str(self._control), "--weights", ",".join(str(weight) for weight in self.weights)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                start_new_session=True)  # the terminal's Ctrl-C reaches Maximus, which unmounts in order
        if self.on_mount is not None:
            self.on_mount(self._process.pid, self._private)
        try:
            self._wait_until_serving()
        except BaseException:
            self.unmount()
            raise

    def stats(self) -> dict[str, Any]:
        """What is pending: files, data changes and their bytes, directory changes; the syncs seen so far."""
        return self._ask("stats")

    def sync(self) -> dict[str, Any]:
        """Everything pending made durable, as sync(2) makes a disk hold what was written: a database restored
        from its pristine copy starts from a state no cut can take back. Answers ``stats`` after it."""
        return self._ask("sync", timeout_s=CUT_TIMEOUT_S)

    def cut(self, seed: int, remount: bool = True) -> CutReport:
        """The power cut: ``crash``, then unmount and, with ``remount``, mount again with nothing pending. Stop the
        database's processes first: a process that still holds a file makes the unmount lazy."""
        report = self.crash(seed)
        self.unmount()
        if remount:
            self.mount()
        return report

    def crash(self, seed: int) -> CutReport:
        """The file system stops serving (from now on every operation fails with EIO, as on a disk without power)
        and the backing directory becomes the crash state drawn by ``seed``; still mounted, so a server can be
        stopped before ``unmount`` without ever seeing the crash state."""
        answer = self._ask(f"cut {seed}", timeout_s=CUT_TIMEOUT_S)
        if answer["errors"]:  # the crash state may be wrong: no verdict may rest on it
            raise PowerCutError(f"the power-cut file system failed {answer['errors']} operations with a bug of its "
                                f"own: {self._log()}")
        return CutReport.from_answer(answer)

    @property
    def pid(self) -> int | None:
        """The file system's process, while mounted: what a journal must end after a SIGKILL of Maximus."""
        return self._process.pid if self._process else None

    def unmount(self) -> None:
        """Unmount (lazily if a process still holds a file), end the file system's process, and check that nothing
        stays mounted."""
        if self._process is None:
            return
        process, self._process = self._process, None
        if is_mounted(self.mountpoint):
            _fusermount(self.mountpoint)
        _end(process)
        if is_mounted(self.mountpoint):
            raise PowerCutError(f"{self.mountpoint} is still mounted after fusermount3 -u and -uz")
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None

    @property
    def _control(self) -> Path:
        assert self._private is not None
        return self._private / "control"

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (self._control.exists() and is_mounted(self.mountpoint)):
            assert self._process is not None
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise PowerCutError(f"the power-cut file system did not mount {self.mountpoint}: {self._log()}")
            time.sleep(0.02)

    def _ask(self, command: str, timeout_s: float = 10.0) -> dict[str, Any]:
        if self._process is None:
            raise PowerCutError("the power-cut file system is not mounted")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as control:
            control.settimeout(timeout_s)
            control.connect(str(self._control))
            control.sendall(command.encode() + b"\n")
            try:
                answer = json.loads(_receive_line(control))
            except PowerCutError as error:
                raise PowerCutError(f"{error}: {self._log()}") from None
        if "error" in answer:
            raise PowerCutError(f"power-cut file system: {answer['error']}")
        return answer

    def _log(self) -> str:
        assert self._private is not None
        text = (self._private / "log").read_text(errors="replace").strip()
        return text.splitlines()[-1] if text else "no message"


def is_mounted(mountpoint: Path) -> bool:
    # abspath, not resolve: resolving would ask the mount itself, which hangs or fails once its process is gone
    return os.path.abspath(mountpoint) in mounted()


def mounted(fsname: str | None = None) -> list[str]:
    """Mount points in /proc/mounts, of file systems named ``fsname`` if given (FSNAME: the layer's)."""
    points = []
    for line in Path("/proc/mounts").read_text().splitlines():
        source, point = line.split()[:2]
        if fsname is None or _unescape(source) == fsname:
            points.append(_unescape(point))
    return points


def _unescape(field: str) -> str:
    """/proc/mounts writes a space, a tab, a newline and a backslash in octal."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def _fusermount(mountpoint: Path) -> None:
    """Unmount; a process that still holds a file makes it busy, and a lazy unmount detaches it all the same."""
    done = subprocess.run(["fusermount3", "-u", str(mountpoint)], capture_output=True, text=True, timeout=30)
    if done.returncode != 0 and is_mounted(mountpoint):
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True, timeout=30)


def _end(process: subprocess.Popen[bytes]) -> None:
    """The file system's process ends once unmounted; after a lazy unmount, once its last file is closed, or
    killed (by its pid) so that the detached mount's last users get errors, not a hang."""
    try:
        process.wait(timeout=EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()


def _receive_line(control: socket.socket) -> bytes:
    received = b""
    while not received.endswith(b"\n"):
        chunk = control.recv(1 << 16)
        if not chunk:
            raise PowerCutError("the power-cut file system closed its control socket without an answer")
        received += chunk
    return received
