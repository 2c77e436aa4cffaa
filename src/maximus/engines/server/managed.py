"""A managed server: one Maximus creates in the work directory, starts for a run and stops after it.

The shared part: its directory made the server user's (or left out when that user cannot reach it), the leftover of
a Maximus that was killed found by its pid file and stopped, the log read from where this start began, the watch on
its main process, and the catalogue read once per version from a throwaway server and cached on disk. An engine says
how its server is initialised, configured, launched and stopped, and what its log says.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from abc import abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Iterator, Mapping, Sequence, TypeVar

from maximus.engines import _process
from maximus.engines.server.control import ServerControl
from maximus.engines.server.log import ServerLog, size
from maximus.errors import EngineError, UserError
from maximus.knobs import KnobCatalogue

_log = logging.getLogger(__name__)  # what a user should know happened to a server (the CLI prints it)


class ManagedServer(ServerControl):
    """A server of Maximus's in ``server_dir``, with its data in ``data/`` and its log in ``server.log`` there."""

    manages = True
    place: ClassVar[str]  # what its directory is, in words, after the title: "cluster", "server"
    main_process: ClassVar[str] = "process"  # its main process's name, in a message: "postmaster, process"
    default_connections: ClassVar[int]  # how many sessions the server takes when no knob says
    stopping_marks: ClassVar[tuple[str, ...]] = ()  # log lines that say the server is on its way down, still alive
    stopped_marks: ClassVar[tuple[str, ...]]  # log lines that say why the server stopped

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        super().__init__(workdir, database, settings, knobs, connection)
        self.port: int | None = None
        self._log_offset = 0  # where this start's part of server_log begins

    # -- what an engine says ----------------------------------------------------------------------------

    @property
    @abstractmethod
    def server_dir(self) -> Path:
        """The server's own directory in the work directory."""

    @property
    def data_dir(self) -> Path:
        return self.server_dir / "data"

    @property
    def server_log(self) -> Path:
        """Every start's output, one after the other."""
        return self.server_dir / "server.log"

    @property
    @abstractmethod
    def server_user(self) -> str:
        """The unprivileged user the server runs as when Maximus runs as root."""

    @staticmethod
    @abstractmethod
    def message(line: str) -> str:
        """A log line's words, without its time stamp and level."""

    @staticmethod
    @abstractmethod
    def is_error(line: str) -> bool:
        """Whether a log line says why the server stopped or would not start."""

    @abstractmethod
    def ours(self, pid: int) -> bool:
        """Whether the running process ``pid`` is this server (its command line names our directory)."""

    @abstractmethod
    def stop_process(self, pid: int) -> None:
        """Stop the server whose main process is ``pid``, and wait until it has."""

    # -- where things live ---------------------------------------------------------------------------

    def data_path(self) -> Path:
        return self.data_dir

    def lock_target(self) -> tuple[Path, str] | None:
        """Every database on the server shares it: the server is locked as a whole (beside its directory, so that
        the lock is taken before the server's directory is made)."""
        return self.workdir / f"{self.server_dir.name}.lock", f"the {self.title} {self.place} {self.server_dir}"

    def make_room_for(self, connections: int) -> None:
        if "max_connections" not in self.settings and connections > self.default_connections:
            self.settings["max_connections"] = str(connections)

    @property
    def log(self) -> ServerLog:
        """This start's part of the server's log."""
        return ServerLog(self.server_log, self.message, self.is_error, self._log_offset)

    def begin_log(self) -> None:
        """What the server says from now on is this start's (the log accumulates over starts)."""
        self._log_offset = size(self.server_log)

    # -- lifecycle -----------------------------------------------------------------------------------

    def make_server_dir(self) -> None:
        """``server_dir``, the server user's; one that user cannot reach is one line, and leaves nothing of ours."""
        created = not self.server_dir.exists()
        self.server_dir.mkdir(parents=True, exist_ok=True)
        try:
            _process.give_to_server_user(self.server_dir, self.server_user)
        except UserError:
            if created:
                shutil.rmtree(self.server_dir, ignore_errors=True)
            raise

    def stop_leftover(self) -> None:
        """A server of ours left running by a Maximus that was killed: stopped (by its pid, ours only). A pid file
        that names no process at all (a power cut left it empty or garbled: it is never synced) is removed, as the
        server removes a stale one itself: it would refuse to start on "bogus data" in it."""
        pid_file = self.pid_file()
        if pid_file is not None and pid_file.exists() and self.pid() is None:
            pid_file.unlink()
        pid = self.pid()
        if pid is not None and _process.alive(pid) and self.ours(pid):
            _log.info("stopping the %s server %d that a Maximus which did not finish left running in %s",
                      self.title, pid, self.data_dir)
            self.stop_process(pid)

    def crash(self) -> None:
        pid = self.pid()
        if pid is None or not _process.alive(pid) or not self.ours(pid):
            raise EngineError(f"the {self.title} server in {self.data_dir} is not running: nothing to crash")
        _process.kill_tree(pid, left=self.left_by_crash)

    def left_by_crash(self, mapped: list[Path]) -> list[Path]:
        """Files a killed server leaves that no later start of it removes, besides the shared memory it maps
        (``mapped``): removed with that memory after a crash."""
        return []

    def await_dead_server(self) -> None:
        """A server that was killed (a run's fault) is a zombie until init reaps it, and until then the next server
        may take the pid in its pid file for a live server and refuse to start: give init a moment."""
        pid = self.pid()
        if pid is not None:
            _process.await_reaped(pid)

    # -- faults --------------------------------------------------------------------------------------

    def watch(self) -> Callable[[], str | None]:
        """The server's main process, alive until the end."""
        pid = self.pid()
        if pid is None:
            return lambda: None
        return lambda: None if _process.alive(pid) else self._stopped(pid)

    def stopped(self) -> str | None:
        pid = self.pid()
        if pid is not None and (not _process.alive(pid) or self.log_says(self.stopping_marks)):  # gone, or going
            return self._stopped(pid)
        return None

    def _stopped(self, pid: int) -> str:
        why = self.log_says(self.stopped_marks) or \
            f"its {self.main_process} {pid} ended without a word in {self.server_log} (killed?)"
        return f"the {self.title} server stopped during the run: {why}"

    def log_says(self, marks: Sequence[str]) -> str | None:
        return self.log.says(marks) if marks else None


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/maximus, by default ~/.cache/maximus."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "maximus"


def cached_rows(name: str, read: Callable[[], tuple[dict, ...]],
                usable: Callable[[tuple[dict, ...]], bool] = bool) -> tuple[dict, ...]:
    """The rows of a server's catalogue, cached on disk as ``name`` (per version): read once, from a throwaway
    server. A cache file that is not one of ours, or not of this Maximus, is read again."""
    cache = cache_dir() / name
    try:
        rows = tuple(json.loads(cache.read_text()))
        if usable(rows):
            return rows
    except (OSError, ValueError, TypeError):  # none yet, or not one of ours: read again
        pass
    rows = read()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(list(rows), default=str))
    return rows


Managed = TypeVar("Managed", bound=ManagedServer)


@contextlib.contextmanager
def throwaway(make: Callable[[Path], Managed], engine: str) -> Iterator[Managed]:
    """A server of ``make`` started in a scratch directory of its own, stopped and removed after: what reads an
    installation's catalogue, so it has no knobs."""
    with tempfile.TemporaryDirectory(prefix=f"maximus-{engine}-catalogue-", dir="/tmp") as scratch:
        Path(scratch).chmod(0o755)  # our own scratch directory: the server user must traverse it
        server = make(Path(scratch))
        server.start()
        try:
            yield server
        finally:
            server.stop()
