"""What the engines with a server share: the server chosen once (managed, or the user's by ``--dsn``), its lifecycle
and catalogue, and the ladder that tells a fault of the server or its data from an error of a transaction."""

from __future__ import annotations

import importlib
import time
from abc import abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Mapping

from maximus.engines.base import Engine
from maximus.engines.server.control import ServerControl, alive_pid
from maximus.knobs import KnobCatalogue

SESSIONS_BESIDE_TERMINALS = 20  # deferred workers, samplers, admin sessions


class ServerEngine(Engine):
    """An engine whose database runs in a server: ``managed`` (Maximus's own) unless the connection names a DSN, then
    ``external`` (the user's). The engine never asks which kind it has: it asks ``self.server``, whose ``errors`` say
    which of its sessions' errors are the server's or its data's."""

    managed: ClassVar[type[ServerControl]]
    external: ClassVar[type[ServerControl]]

    def __init__(self, workdir: Path, database: str, settings: Mapping[str, object] | None = None,
                 connection: Mapping[str, str] | None = None) -> None:
        super().__init__(workdir, database, settings, connection)
        self.server = self.server_control(self.connection)(self.workdir, database, self.settings, self.knobs,
                                                           self.connection)
        self._server_settings: dict[str, str] | None = None  # the knobs' values as the started server reported them
        self._server_version: str | None = None  # as the started server reported it

    @classmethod
    def driver_error(cls) -> type[Exception]:
        """Its driver's ``Error``, the base class of every error a DB-API driver raises (PEP 249)."""
        assert cls.driver is not None, f"{cls.name} names its driver"
        return importlib.import_module(cls.driver.module).Error

    @classmethod
    def server_control(cls, connection: Mapping[str, str]) -> type[ServerControl]:
        """A server of the user's when the connection names one (a DSN), else a managed one."""
        return cls.external if connection.get("dsn") else cls.managed

    # -- knobs ---------------------------------------------------------------------------------------

    @classmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        """The server's own settings (and any knob of Maximus's that chooses or builds the server)."""
        return cls.server_control(connection).catalogue(connection)

    @classmethod
    def catalogue_for(cls, settings: Mapping[str, object], connection: Mapping[str, str]) -> KnobCatalogue:
        return cls.server_control(connection).catalogue_for(settings, connection)

    def validate_run(self, terminals: int) -> None:
        """Every terminal and deferred worker holds a connection: a managed server gets enough of them."""
        self.server.make_room_for(terminals + SESSIONS_BESIDE_TERMINALS)

    # -- where things live ---------------------------------------------------------------------------

    @classmethod
    def manages_server_for(cls, connection: Mapping[str, str]) -> bool:
        return cls.server_control(connection).manages

    @property
    def manages_server(self) -> bool:
        return self.server.manages

    def lock_target(self) -> tuple[Path, str] | None:
        """A managed server is locked as a whole; a server of the user's is not Maximus's."""
        return self.server.lock_target()

    def data_path(self) -> Path:
        return self.server.data_path()

    def server_pid(self) -> int | None:
        return alive_pid(self.server)

    def version(self) -> str:
        """The installation's version; a server of the user's is asked (it has been started)."""
        return self.server.version(self._server_version)

    # -- server lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._server_settings = None
        self.server.start()
        try:
            self._server_settings, self._server_version = self.read_server()
        except BaseException:
            self.stop()  # started but unreadable: no running() block will stop it
            raise

    @abstractmethod
    def read_server(self) -> tuple[dict[str, str], str | None]:
        """The started server's knobs as it reports them, and its version."""

    def stop(self) -> None:
        self.server.stop()

    def crash(self) -> None:
        self.server.crash()

    def watch(self) -> Callable[[], str | None]:
        return self.server.watch()

    def fault(self, error: str) -> str | None:
        """A full disk, a corrupt database, or a lost connection, which is the server's end where it ended (a
        managed server's, as its log says) or a crash it recovers from; None for the transaction's own error."""
        first_line = error.strip().splitlines()[0] if error.strip() else error
        if _says(error, self.server.errors.full):
            return f"the disk holding {self.data_path()} is full ({first_line})"
        if _says(error, self.server.errors.corrupt):
            return f"the {self.server.title} database {self.database} is corrupt ({first_line})"
        if _says(error, self.server.errors.unexplained_io):
            return self._io_fault(first_line)
        if not _says(error, self.server.errors.lost):
            return None
        stopped = self._stopped_soon()
        if stopped:
            return self._stopped_on_full_disk() or stopped
        crash = self.server.log_says(self.server.errors.crashed) if self.server.errors.crashed else None
        if crash:
            return f"the {self.server.title} server ended every session to recover from a crash during the run: {crash}"
        return f"the connection to the {self.server.title} server was lost during the run ({first_line})"

    def _io_fault(self, first_line: str) -> str:
        """A write to the server's files that failed for a cause the error lost: a full disk where the server's log
        (this start's part) says so, else the error, with where to look."""
        full = self.server.log_says(self.server.errors.full_in_log)
        if full:
            return f"the disk holding {self.data_path()} is full ({full})"
        return f"the {self.server.title} server could not write its files ({first_line}): its error log says why"

    def _stopped_on_full_disk(self) -> str | None:
        """A server that stopped after its log (this start's part) said its disk was full: MariaDB aborts when a
        rollback finds no space ("[FATAL] InnoDB: Error (Out of disk space) in rollback"), and the full disk is the
        cause to name, not the stop."""
        full = self.server.log_says(self.server.errors.full_in_log)
        return f"the disk holding {self.data_path()} is full, and the {self.server.title} server stopped ({full})" \
            if full else None

    def _stopped_soon(self) -> str | None:
        """The server's end, if it ended, waiting ``errors.stop_seen_within_s`` for a managed server's."""
        deadline = time.monotonic() + (self.server.errors.stop_seen_within_s if self.server.manages else 0.0)
        while True:
            stopped = self.server.stopped()
            if stopped or time.monotonic() >= deadline:
                return stopped
            time.sleep(0.02)


def _says(error: str, marks: tuple[str, ...]) -> bool:
    return any(mark in error for mark in marks)
