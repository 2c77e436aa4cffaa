"""What Maximus changed on a server of the user's (``SET GLOBAL``), kept on disk from before the first change until
everything is put back. A Maximus killed in between (SIGKILL, the OOM killer, a power cut) cannot put it back: the
next Maximus that uses the same server does, before it reads or changes anything there, or says in one line how to.

One file per Maximus process and server, ``$XDG_STATE_HOME/maximus/mariadb-changes/<host>-<port>-<pid>.json``
(``~/.local/state`` by default), written before the first ``SET GLOBAL`` and removed once the values are back. It
names its process by pid and start time: a file whose process no longer runs was left by one that was killed; a
file of a live process (another Maximus using the same server now) is that process's own to put back.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from maximus.pids import start_time


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
        """Before the first change: what each variable was, and who changes it (written whole, then renamed)."""
        state_dir().mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".partial")
        partial.write_text(json.dumps({"pid": os.getpid(), "started": start_time(os.getpid()),
                                       "before": dict(before)}))
        partial.rename(self.path)

    def forget(self) -> None:
        """Everything is put back (or the user was told how to)."""
        self.path.unlink(missing_ok=True)

    def abandoned(self) -> list[Abandoned]:
        """The journals of this server whose Maximus no longer runs; an unreadable one (cut short) holds nothing."""
        found = []
        for path in sorted(state_dir().glob(f"{self.server}-*.json")):
            try:
                entry = json.loads(path.read_text())
                pid, started, before = int(entry["pid"]), entry["started"], dict(entry["before"])
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)
                continue
            if started is None or start_time(pid) != started:
                found.append(Abandoned(path, pid, before))
        return found
