"""Server processes owned by Maximus: run as an unprivileged user, find free ports, stop by pid."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable, Sequence

from maximus.errors import EngineError, UserError

SERVER_USER = os.environ.get("MAXIMUS_SERVER_USER", "postgres")


def running_as_root() -> bool:
    return os.geteuid() == 0


def as_server_user(command: Sequence[str]) -> list[str]:
    """Servers such as PostgreSQL refuse to run as root: run them as an unprivileged user then."""
    if not running_as_root():
        return list(command)
    if shutil.which("runuser") is None:
        raise EngineError("running as root needs `runuser` (util-linux) to start the server as an unprivileged user")
    return ["runuser", "-u", SERVER_USER, "--", *command]


def in_place_as(server_user: str, command: Sequence[str]) -> list[str]:
    """As root, ``command`` run as ``server_user`` by ``setpriv``, which executes it in place (unlike ``runuser``,
    which forks): the pid Maximus holds is the server's own, to wait for and to signal."""
    if not running_as_root():
        return list(command)
    return ["setpriv", f"--reuid={server_user}", f"--regid={server_user}", "--init-groups", "--", *command]


def run(command: Sequence[str], what: str, timeout: float = 300, env: dict | None = None) -> str:
    """Run a command to completion; a failure is an EngineError naming what failed and its last output line."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EngineError(f"{what} failed: {error}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise EngineError(f"{what} failed: {lines[-1] if lines else f'exit code {done.returncode}'}")
    return done.stdout


def give_to_server_user(path: Path, server_user: str = SERVER_USER) -> None:
    """Make ``path`` (a file or directory Maximus created) the server user's, and check the user can reach it."""
    if not running_as_root():
        return
    user = pwd.getpwnam(server_user)
    os.chown(path, user.pw_uid, user.pw_gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), user.pw_uid, user.pw_gid)
    probe = subprocess.run(["runuser", "-u", server_user, "--", "test", "-w", str(path)], capture_output=True)
    if probe.returncode != 0:
        raise UserError(f"user {server_user} cannot reach {path} (a parent directory is private): choose a "
                          "--workdir that user can traverse, such as /var/tmp/maximus")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie, exited but not yet reaped, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    state = _state(pid)
    return state is None or state not in ("Z", "X")


def kill_tree(pid: int, timeout_s: float = 10.0, left: Callable[[list[Path]], list[Path]] = lambda mapped: []) -> None:
    """SIGKILL ``pid`` and every process under it at once, as a crash ends them, and wait until none runs: the main
    process first, so it starts no other, then the rest, found before it died (they are init's after).

    The shared memory they had mapped goes too (PostgreSQL's System V segment and its dynamic segments in /dev/shm):
    a crashed server's next start would remove it, but a server that is never started again would leave it on the
    machine for good. ``left`` gives, from the shared memory files they map, the further files the killed processes
    leave, removed with them: segments that a process which has ended made and no one maps any more (PostgreSQL's
    control segment lists them), a socket outside the server's directory (MariaDB's in /tmp)."""
    _signal(pid, signal.SIGSTOP)  # held: it starts no other process, and maps no other memory, before the kill
    family = [pid, *descendants(pid)]
    for member in family[1:]:
        _signal(member, signal.SIGSTOP)
    # a signal is sent at once but taken when its process next runs: one running on another core could still make a
    # segment after its maps were read (a PostgreSQL restarting after a crash makes its control segment anew)
    await_stopped(family, timeout_s)
    files, segments = shared_memory(family)
    further = left(shared_memory_files(files))
    for member in family:
        _signal(member, signal.SIGKILL)
    await_ended(family, timeout_s)
    _reap_ours(family)
    await_reaped(pid, timeout_s)
    remove_shared_memory(files, segments)
    for file in further:
        file.unlink(missing_ok=True)


def await_ended(pids: Sequence[int], timeout_s: float) -> None:
    """Wait a while until none of ``pids`` runs (a zombie has ended)."""
    deadline = time.monotonic() + timeout_s
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.01)


def await_stopped(pids: Sequence[int], timeout_s: float) -> None:
    """Wait a while until each of ``pids`` has taken its SIGSTOP (or has ended)."""
    deadline = time.monotonic() + timeout_s
    while any(_state(pid) not in (None, "T", "t", "Z", "X") for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.001)


def shared_memory(pids: Sequence[int]) -> tuple[set[int], set[int]]:
    """The shared memory the processes map, from /proc/PID/maps, or hold open to map (/proc/PID/fd: a segment just
    made): the inodes of its files under /dev/shm, and the ids of its System V segments (shown as ``/SYSV<key>``, the
    id in the inode column). Inodes, not paths: a named semaphore is made under a temporary name and then linked to its
    own, so a mapping shows a path that is gone."""
    files: set[int] = set()
    segments: set[int] = set()
    for pid in pids:
        files.update(_open_shared_memory(pid))
        try:
            lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
        except OSError:  # gone, or not ours to read
            continue
        for fields in (line.split(maxsplit=5) for line in lines):
            if len(fields) == 6 and fields[5].startswith("/dev/shm/"):
                files.add(int(fields[4]))
            elif len(fields) == 6 and fields[5].startswith("/SYSV"):
                segments.add(int(fields[4]))
    return files, segments


def _open_shared_memory(pid: int) -> set[int]:
    """The inodes of the files under /dev/shm that ``pid`` holds open."""
    inodes: set[int] = set()
    try:
        with os.scandir(f"/proc/{pid}/fd") as descriptors:
            for descriptor in descriptors:
                try:
                    if os.readlink(descriptor.path).startswith(f"{SHARED_MEMORY}/"):
                        inodes.add(os.stat(descriptor.path).st_ino)
                except OSError:  # closed meanwhile
                    continue
    except OSError:  # gone, or not ours to read
        pass
    return inodes


def shared_memory_files(inodes: set[int]) -> list[Path]:
    """The files under /dev/shm with these inodes."""
    found = []
    with os.scandir(SHARED_MEMORY) as entries:
        for entry in entries:
            try:
                if entry.inode() in inodes and entry.is_file(follow_symlinks=False):
                    found.append(Path(entry.path))
            except OSError:  # gone meanwhile
                continue
    return found


def remove_shared_memory(files: set[int], segments: set[int]) -> None:
    """Remove what ``shared_memory`` found, once its processes are gone; what is gone already is left alone."""
    for file in shared_memory_files(files) if files else ():
        file.unlink(missing_ok=True)
    if segments:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for segment in segments:
            libc.shmctl(segment, IPC_RMID, None)  # an id already removed fails with EINVAL: nothing to do


SHARED_MEMORY = "/dev/shm"
IPC_RMID = 0  # <sys/ipc.h>


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:  # ended meanwhile
        pass


def _reap_ours(pids: Sequence[int]) -> None:
    """Reap those of ``pids`` that are this process's children (a server started in place, MariaDB's): init reaps
    the others, and a zombie of ours would wait for us for ever."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not ours, or already reaped
            pass


def descendants(pid: int) -> list[int]:
    """The processes under ``pid``: its children, theirs, and so on."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _parent(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found, waiting = [], list(children.get(pid, []))
    while waiting:
        child = waiting.pop()
        found.append(child)
        waiting.extend(children.get(child, []))
    return found


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def zombie(pid: int) -> bool:
    """Whether ``pid`` exited and waits for its parent to reap it (to anyone but /proc, it still exists)."""
    return _state(pid) == "Z"


def await_reaped(pid: int, timeout_s: float = 10.0) -> None:
    """Wait a while for a zombie to be reaped: by init when its parent is gone, by this process when it is its child.
    A killed process shows as a zombie while its threads are still ending, and cannot be reaped until they have: a
    single look (``_reap_ours``) then left a killed MariaDB to wait out the whole timeout."""
    deadline = time.monotonic() + timeout_s
    while zombie(pid) and time.monotonic() < deadline:
        _reap_ours([pid])
        time.sleep(0.01)


def _state(pid: int) -> str | None:
    """The state letter in ``/proc/PID/stat`` (R, S, Z, ...); None when it cannot be read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def log_since(log: Path | str, offset: int) -> list[str]:
    """The lines a server wrote to ``log`` from ``offset`` on: what one start said, not the runs' before it."""
    try:
        with open(log, "rb") as file:
            file.seek(offset)
            return file.read().decode(errors="replace").splitlines()
    except OSError:
        return []
