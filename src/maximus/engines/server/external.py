"""A server the user owns, named by a DSN.

Maximus connects to it as it is. Its knobs change only with the user's leave (``allow_changes``, and whatever else
the engine asks for a knob that needs a restart); what each changed setting was before the run is kept when the run
starts, and put back when it ends, also on Ctrl-C or an error. An engine says how the leave is checked, how the
values before are read, and how knobs are applied and put back.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Iterable, Mapping

from maximus.engines.base import ConnectionOption
from maximus.engines.server.control import ServerControl
from maximus.errors import EngineError
from maximus.knobs import Applies, KnobCatalogue


def dsn_option(title: str, address: str) -> ConnectionOption:
    """``--dsn``, which chooses external mode (``ServerEngine.server_control``); ``address`` says how the engine's
    server is named."""
    return ConnectionOption("dsn", f"{title}: a server you own (external mode) instead of a managed one, by {address}.")


def allow_changes_option(title: str, how: str) -> ConnectionOption:
    """``--allow-changes``, without which ``ExternalServer`` changes nothing on the user's server; ``how`` says how
    the engine sets a knob there."""
    return ConnectionOption("allow_changes", f"{title} external mode: let Maximus set knobs on your server ({how}), "
                            "put back after the run.", kind="flag")


class ExternalServer(ServerControl):
    """The user's server at ``connection["dsn"]``."""

    manages = False

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        super().__init__(workdir, database, settings, knobs, connection)
        self.kept: dict[str, str | None] = {}  # each setting the run changed, as the user had it before

    def version(self, reported: str | None) -> str:
        """As the started server reported it."""
        return reported or "external"

    def data_path(self) -> Path:
        return self.workdir

    @property
    def allows_changes(self) -> bool:
        return self.connection.get("allow_changes") == "yes"

    def needing_restart(self, names: Iterable[str]) -> list[str]:
        return [name for name in names if self.knobs.get(name).applies is Applies.RESTART]

    def start(self) -> None:
        """The run's knobs set on the user's server, with leave; what they were before is kept for ``stop``."""
        if not self.settings:
            return
        self.refuse_without_leave()
        if not self.kept:  # a second start() before stop(): what was there before is already kept
            self.kept = self.values_before(list(self.settings))
        try:
            self.change(self.settings)
        except EngineError:  # a change that failed has put back what it could
            self.kept = {}
            raise

    def stop(self) -> None:
        """Each setting the run changed put back as it was before the run, so a knob of one run does not stay on the
        user's server for the next one, or after Maximus."""
        if not self.kept:
            return
        before, self.kept = self.kept, {}
        self.put_back(before)

    @abstractmethod
    def refuse_without_leave(self) -> None:
        """A one-line ``UserError`` naming what the user must allow for the run's knobs, when they have not."""

    @abstractmethod
    def values_before(self, names: list[str]) -> dict[str, str | None]:
        """What ``put_back`` restores each of ``names`` to (None: the user had set nothing)."""

    @abstractmethod
    def change(self, values: Mapping[str, str]) -> None:
        """Set ``values`` on the server; one that fails puts back what it changed and raises ``EngineError``."""

    @abstractmethod
    def put_back(self, before: Mapping[str, str | None]) -> None:
        """Set each setting back to its value ``before`` the run; what could not be is one ``EngineError`` line."""
