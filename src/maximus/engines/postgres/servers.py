"""How the PostgreSQL engine gets at its server: one interface, two strategies, chosen once when the engine is
built. ``ManagedServer`` (``managed.py``) is a throwaway cluster Maximus runs in the work directory;
``ExternalServer`` (``external.py``) is a server the user owns, named by a DSN, whose configuration Maximus
changes only when allowed to and puts back after the run."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

from maximus.engines import _process
from maximus.knobs import KnobCatalogue


class ServerControl(ABC):
    """Starting, stopping and reaching one PostgreSQL server with the run's knobs (``settings``, the engine's
    own dictionary, which ``make_room_for`` may complete)."""

    manages: ClassVar[bool]  # Maximus starts and stops the server itself

    def __init__(self, workdir: Path, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        self.workdir, self.settings, self.knobs, self.connection = workdir, settings, knobs, connection

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
    def dsn(self, database: str) -> str:
        """The connection string of ``database`` on the server."""

    def admin(self) -> Any:
        """An autocommit session on the maintenance database."""
        import psycopg

        return psycopg.connect(self.dsn("postgres"), autocommit=True)

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
        """Maximus's own knobs that chose this server (``bin_dir``), as the run reports them."""
        return {}

    def monitoring_settings(self) -> dict[str, str]:
        """The timing settings Maximus turns on for the sampler, those the run's knobs leave unset."""
        return {}

    def pid_file(self) -> Path | None:
        """The postmaster's ``postmaster.pid``, where its processes are Maximus's to sample."""
        return None

    def watch(self) -> Callable[[], str | None]:
        """A probe of the server's postmaster (``Engine.watch``); a server of the user's tells only through its
        sessions' errors (``Engine.fault``)."""
        return lambda: None

    def stopped(self) -> str | None:
        """Why the server stopped, or is stopping, in one line; None while it runs or when Maximus cannot tell."""
        return None

    def log_says(self, marks: Sequence[str]) -> str | None:
        """The first line of this start's part of the server's log with one of ``marks``, where Maximus has it."""
        return None


def size(path: Path | str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def message(line: str) -> str:
    """``could not ...`` of ``2026-11-25 01:52:34.604 UTC [10615] PANIC:  could not ...``."""
    return line.split(":  ", 1)[-1].strip()


def first_error(log: Path | str, offset: int) -> str:
    """Why a start failed, from that start's part of the log: its first FATAL or PANIC line, else its last line
    (a setting the postmaster refuses before its logging starts is written without a level)."""
    lines = [line for line in _process.log_since(log, offset) if line.strip()]
    severe = [line for line in lines if "FATAL:  " in line or "PANIC:  " in line]
    if severe:
        return message(severe[0])
    return message(lines[-1]).removeprefix("postgres: ") if lines else "the server log says nothing"
