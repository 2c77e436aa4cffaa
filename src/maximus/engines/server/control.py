"""How a server engine gets at its server: one interface, two strategies chosen once when the engine is built.

A managed server (``managed.py``) is one Maximus creates and runs in the work directory; an external one
(``external.py``) is a server the user owns, named by a DSN, whose settings Maximus changes only when allowed to and
puts back after the run. An engine adds to these only what its server does otherwise: how it is initialised,
started, stopped and reached, where its catalogue comes from, how knobs are applied and put back, and what its log
and its errors say.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar, Mapping, Sequence

from maximus.engines import _process
from maximus.errors import UserError
from maximus.knobs import KnobCatalogue


@dataclass(frozen=True)
class ServerErrors:
    """How an engine's sessions and its server's log say that the server or its data, not the transaction, failed:
    words of the error (``Type: message``, as ``errors.describe`` writes it), each a substring."""

    lost: tuple[str, ...]  # the connection broke
    full: tuple[str, ...]  # the disk is full
    corrupt: tuple[str, ...]  # a data file is corrupt
    crashed: tuple[str, ...] = ()  # the server's log: it ended every session to recover from a crash
    # A failed write to the server's files whose cause the error lost (MariaDB's "Can't change size of file", whose
    # errno is garbage), and the words of the server's log that name a full disk as the cause.
    unexplained_io: tuple[str, ...] = ()
    full_in_log: tuple[str, ...] = ()
    # How long a lost connection waits for a managed server to be seen stopped: a killed server's sockets may close
    # before its process is gone, and before its log says so.
    stop_seen_within_s: float = 0.0


class ServerControl(ABC):
    """Starting, stopping and reaching one server with the run's knobs (``settings``, the engine's own dictionary,
    which ``make_room_for`` may complete), for the engine's ``database``.

    Contract (``tests/contracts/test_engines.py`` runs it for every server engine): ``start`` leaves the server
    running with the knobs, or raises having undone what it did; ``stop`` undoes ``start``, and is safe to call
    twice; ``watch``, ``stopped`` and ``log_says`` answer in one line or None, and never raise."""

    manages: ClassVar[bool]  # Maximus starts and stops the server itself
    title: ClassVar[str]  # the server's name in a message: "PostgreSQL"
    errors: ClassVar[ServerErrors]  # what says that the server or its data, not the transaction, failed

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        self.workdir, self.database, self.settings, self.knobs, self.connection = \
            workdir, database, settings, knobs, connection

    @classmethod
    @abstractmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        """The knobs of the server ``connection`` leads to."""

    @classmethod
    def catalogue_for(cls, settings: Mapping[str, object], connection: Mapping[str, str]) -> KnobCatalogue:
        """The catalogue that validates ``settings``, where a knob may choose the server itself."""
        return cls.catalogue(connection)

    @abstractmethod
    def start(self) -> None:
        """The server running with the run's knobs."""

    @abstractmethod
    def stop(self) -> None:
        """Undo ``start``; safe to call twice."""

    @abstractmethod
    def version(self, reported: str | None) -> str:
        """The server's version; ``reported`` is what the started server said, if it did."""

    @abstractmethod
    def data_path(self) -> Path:
        """Where the data lives, as far as Maximus can tell (the environment fingerprint)."""

    def make_room_for(self, connections: int) -> None:
        """Have the server take ``connections`` sessions at once, where Maximus chooses its configuration."""

    def lock_target(self) -> tuple[Path, str] | None:
        """What a second Maximus must not use at the same time (``Engine.lock_target``)."""
        return None

    def chosen_settings(self) -> dict[str, str]:
        """What Maximus chose for this server beside the run's knobs, as the run reports it."""
        return {}

    def monitoring_settings(self) -> dict[str, str]:
        """The settings Maximus turns on for the engine's sampler, those the run's knobs leave unset."""
        return {}

    def pid_file(self) -> Path | None:
        """The server's pid file, where its processes are Maximus's to sample and to watch."""
        return None

    def pid(self) -> int | None:
        """The server's main process, from its pid file; None without one."""
        pid_file = self.pid_file()
        return pid_in(pid_file) if pid_file else None

    def crash(self) -> None:
        """SIGKILL every process of the server (a crash test): only a server Maximus manages is its to kill."""
        raise UserError(f"a crash test kills the {self.title} server: it needs a server Maximus manages, not one of "
                        "yours (--dsn)")

    def watch(self) -> Callable[[], str | None]:
        """A probe of the server's main process (``Engine.watch``); a server of the user's tells only through its
        sessions' errors (``Engine.fault``)."""
        return lambda: None

    def stopped(self) -> str | None:
        """Why the server stopped, or is stopping, in one line; None while it runs or when Maximus cannot tell."""
        return None

    def log_says(self, marks: Sequence[str]) -> str | None:
        """The first line of this start's part of the server's log with one of ``marks``, where Maximus has it."""
        return None


def pid_in(pid_file: Path) -> int | None:
    """The first number of a pid file (PostgreSQL's ``postmaster.pid``, MariaDB's ``mariadbd.pid``)."""
    try:
        return int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def alive_pid(control: ServerControl) -> int | None:
    """The server's main process while it runs."""
    pid = control.pid()
    return pid if pid is not None and _process.alive(pid) else None
