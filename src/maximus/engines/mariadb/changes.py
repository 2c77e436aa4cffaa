"""What Maximus changed on a server of the user's (``SET GLOBAL``), kept on disk from before the first change until
everything is put back. A Maximus killed in between (SIGKILL, the OOM killer, a power cut) cannot put it back: the
next Maximus that uses the same server does, before it reads or changes anything there, or says in one line how to.

One file per Maximus process and server, ``$XDG_STATE_HOME/maximus/mariadb-changes/<host>-<port>-<pid>.json``
(``~/.local/state`` by default), written before the first ``SET GLOBAL`` and removed once the values are back. It
names its process by pid and start time: a file whose process no longer runs was left by one that was killed; a
file of a live process (another Maximus using the same server now) is that process's own to put back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from maximus.pids import start_time

_log = logging.getLogger(__name__)  # what the user should know (the CLI prints it as a note)


def state_dir() -> Path:
    """$XDG_STATE_HOME/maximus/mariadb-changes, by default ~/.local/state/maximus/mariadb-changes."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "maximus" / "mariadb-changes"


@dataclass(frozen=True)
class Abandoned:
    """The changes a Maximus that no longer runs left on the server: each variable's value before it."""

    path: Path
    pid: int
    before: dict[str, str | None]


class ChangesJournal:
    """The journal of this process's changes to the server at ``host``:``port``."""

    def __init__(self, host: str, port: int) -> None:
        self.server = f"{re.sub(r'[^A-Za-z0-9.-]', '_', host)}-{port}"

    @property
    def path(self) -> Path:
        return state_dir() / f"{self.server}-{os.getpid()}.json"

    def write(self, before: Mapping[str, str | None]) -> None:
        """Before the first change: what each variable was, and who changes it (written whole, then renamed). Where
        it cannot be written the run goes on, as before there was a journal, and the user is told what it means."""
        try:
            state_dir().mkdir(parents=True, exist_ok=True)
            partial = self.path.with_suffix(".partial")
            partial.write_text(json.dumps({"pid": os.getpid(), "started": start_time(os.getpid()),
                                           "before": dict(before)}))
            partial.rename(self.path)
        except (OSError, RuntimeError) as error:  # RuntimeError: no home directory to find
            _log.warning("cannot keep the journal of your MariaDB server's changes (%s): if this Maximus is killed, "
                         "put back %s yourself", error, ", ".join(f"{name}={value}" for name, value in before.items()))

    def forget(self) -> None:
        """Everything is put back (or the user was told how to)."""
        with contextlib.suppress(OSError, RuntimeError):
            self.path.unlink(missing_ok=True)

    def abandoned(self) -> list[Abandoned]:
        """The journals of this server whose Maximus no longer runs; an unreadable one (cut short) holds nothing."""
        try:
            paths = sorted(state_dir().glob(f"{self.server}-*.json"))
        except (OSError, RuntimeError):
            return []
        found = []
        for path in paths:
            try:
                entry = json.loads(path.read_text())
                pid, started, before = int(entry["pid"]), entry["started"], dict(entry["before"])
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)
                continue
            if started is None or start_time(pid) != started:
                found.append(Abandoned(path, pid, before))
        return found
