"""A server the user owns, named by a DSN.

Maximus connects to it as it is. Its knobs change only with the user's leave: ``allow_changes`` (ALTER SYSTEM and
a reload) and ``allow_restart`` (also a restart with ``pg_ctl``, for a server on this machine not run by a
system service); after the run, ALTER SYSTEM's file is put back as it was.
"""

from __future__ import annotations

import logging
import os
import pwd
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from maximus.engines import _process, server
from maximus.engines.postgres.catalogue import catalogue_of, server_settings
from maximus.engines.postgres.servers import PostgresServer, is_error, message
from maximus.engines.postgres.settings import BIN_DIR, find_bin_dir
from maximus.errors import EngineError, UserError
from maximus.knobs import KnobCatalogue

_log = logging.getLogger(__name__)  # what a user should know happened to their server (the CLI prints it)


class ExternalServer(PostgresServer, server.ExternalServer):
    """The user's server at ``connection["dsn"]``: ALTER SYSTEM and a reload with ``allow_changes``, and a restart
    with ``allow_restart`` for a knob that needs one."""

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        super().__init__(workdir, database, settings, knobs, connection)
        if "port" in settings:
            raise UserError("port is not a knob of a server given by --dsn: Maximus connects to the port the DSN "
                            "names, and your server would move away from it at its restart")

    @classmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        return catalogue_of(server_settings(connection["dsn"]))

    @classmethod
    def catalogue_for(cls, settings: Mapping[str, object], connection: Mapping[str, str]) -> KnobCatalogue:
        if settings.get(BIN_DIR) is not None:
            raise UserError("bin_dir chooses the binaries of a managed server: a server given by --dsn is yours")
        return cls.catalogue(connection)

    def dsn(self, database: str) -> str:
        from psycopg.conninfo import make_conninfo

        return make_conninfo(self.connection["dsn"], dbname=database)

    def refuse_without_leave(self) -> None:
        """``--allow-changes`` for a knob a reload sets, ``--allow-restart`` for one that needs a restart, and a server
        Maximus can restart (``LocalServer.of``)."""
        restart = self.needing_restart(self.settings)
        if not self.allows_changes:
            needed = ("--allow-restart (ALTER SYSTEM + restart)" if restart
                      else "--allow-changes (ALTER SYSTEM + reload)")
            raise UserError(f"knobs on a server you own change only with {needed}")
        if restart and self.connection.get("allow_restart") != "yes":
            raise UserError(f"{', '.join(restart)} {'takes' if len(restart) == 1 else 'take'} effect only after a "
                            "restart: allow Maximus to restart "
                            "your server with --allow-restart (a server on this machine, started with pg_ctl)")
        if restart:
            LocalServer.of(self.admin)

    def values_before(self, names: list[str]) -> dict[str, str | None]:
        """What ALTER SYSTEM had set for each (``postgresql.auto.conf``), or None."""
        with self.admin() as admin:
            return _auto_conf_entries(admin, names)

    def change(self, values: Mapping[str, str]) -> None:
        restart = self.needing_restart(values)
        self._alter(values, ", ".join(f"{name}={values[name]}" for name in restart), "the configuration it had before")

    def put_back(self, before: Mapping[str, str | None]) -> None:
        """What ``ALTER SYSTEM`` said before the run (a value of the user's own, or nothing); restarted again when a
        knob needed it."""
        restart = self.needing_restart(before)
        put_back = ", ".join(f"{name} reset" if before[name] is None else f"{name}={before[name]}"
                             for name in restart)
        self._alter(before, f"the configuration put back ({put_back})",
                    f"the run's {', '.join(f'{name}={self.settings[name]}' for name in restart)}, which stays in "
                    "postgresql.auto.conf until you ALTER SYSTEM SET or RESET it")

    def _alter(self, values: Mapping[str, str | None], because: str, fallback: str) -> None:
        """``ALTER SYSTEM`` and reload; then, for knobs that need it, restart the server, which runs with ``fallback``
        (the file as it was before) if it will not restart."""
        local = LocalServer.of(self.admin) if self.needing_restart(values) else None
        before = local.auto_conf.read_text() if local else ""
        changed = ", ".join(f"RESET {name}" if value is None else f"SET {name}={value}"
                            for name, value in values.items())
        _log.info("your PostgreSQL server: ALTER SYSTEM %s, then %s", changed,
                  f"a restart (fast shutdown) of {local.data_dir}" if local else "a reload")
        with self.admin() as admin:
            _alter_system(admin, values)
        if local:
            local.restart(because, before, fallback)


@dataclass(frozen=True)
class LocalServer:
    """A server of the user's on this machine, as pg_ctl restarts it: its data directory, its pg_ctl, its
    owner, and the file its output goes to."""

    data_dir: Path
    pg_ctl: Path
    owner: str
    log: str

    @classmethod
    def of(cls, connect: Callable[[], Any]) -> LocalServer:
        """The server behind ``connect``, or a one-line refusal when Maximus cannot restart it."""
        with connect() as admin:
            data_dir, port = admin.execute("SELECT current_setting('data_directory'), "
                                           "current_setting('port')").fetchone()
        data_dir = Path(data_dir)
        try:
            lines = (data_dir / "postmaster.pid").read_text().splitlines()
            pid, pid_port = int(lines[0]), lines[3].strip()  # the file's first and fourth lines
        except (OSError, ValueError, IndexError):
            pid, pid_port = 0, ""
        if pid_port != port or not _process.alive(pid):  # a directory of that name here is not the server
            raise UserError(f"cannot restart the server: its data directory {data_dir} is not on this machine "
                            "(or not readable)")
        unit = _system_service(pid)
        if unit:
            raise UserError(f"cannot restart the server: the system service {unit} runs it; restart it yourself "
                            "with the knobs set, or use managed mode")
        try:
            pg_ctl = Path(os.readlink(f"/proc/{pid}/exe")).parent / "pg_ctl"
        except OSError:
            pg_ctl = find_bin_dir() / "pg_ctl"
        output = Path(f"/proc/{pid}/fd/2")
        log = os.readlink(output) if output.is_file() else os.devnull  # where its messages went, kept there
        log = os.devnull if log.endswith(" (deleted)") else log
        return cls(data_dir, pg_ctl, pwd.getpwuid(data_dir.stat().st_uid).pw_name, log)

    @property
    def auto_conf(self) -> Path:
        return self.data_dir / "postgresql.auto.conf"

    def restart(self, because: str, auto_conf_before: str, fallback: str) -> None:
        """``pg_ctl restart`` with the server's own command line. One that fails puts the ALTER SYSTEM file
        back as it was before (``auto_conf_before``, which gives the server ``fallback``) and starts the
        server again: a knob the server refuses does not leave the user's server down."""
        log = server.ServerLog(self.log, message, is_error)
        log.begin()
        try:
            self._pg_ctl("restart")
        except EngineError:
            reason = log.first_error()
            self.auto_conf.write_text(auto_conf_before)
            try:
                self._pg_ctl("start")
            except EngineError as error:
                raise EngineError(f"PostgreSQL would not restart with {because} ({reason}), nor start again with "
                                  f"the configuration it had before: {error}") from None
            raise EngineError(f"PostgreSQL would not restart with {because} ({reason}): it runs again with "
                              f"{fallback}") from None

    def _pg_ctl(self, action: str) -> None:
        command = [str(self.pg_ctl), "-D", str(self.data_dir), "-l", self.log, "-m", "fast", "-w", "-t", "120",
                   action]
        if _process.running_as_root() and self.owner != "root":
            command = ["runuser", "-u", self.owner, "--", *command]
        _process.run(command, f"{action} of PostgreSQL", timeout=300)


def _system_service(pid: int) -> str:
    try:
        return system_service_in(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return ""


def system_service_in(cgroup: str) -> str:
    """The system service a process runs under (``postgresql@15-main.service``) by its ``/proc/PID/cgroup``,
    or '' for one started from a login session (under user.slice) or on a machine without systemd."""
    found = re.search(r"/system\.slice/(?:[^/\n]+\.slice/)*([^/\n]+\.service)", cgroup)
    return found.group(1) if found else ""


def _auto_conf_entries(admin: Any, names: Sequence[str]) -> dict[str, str | None]:
    """Each name's line in ``postgresql.auto.conf`` (what ALTER SYSTEM set), or None where it has none."""
    rows = admin.execute("SELECT name, setting FROM pg_file_settings WHERE name = ANY(%s) "
                         "AND sourcefile LIKE '%%/postgresql.auto.conf' ORDER BY seqno", (list(names),)).fetchall()
    found: dict[str, str | None] = {name: None for name in names}
    return found | dict(rows)


def _quoted(value: str) -> str:
    """A value as a single-quoted SQL string, which ALTER SYSTEM takes (and writes out in its own file)."""
    return "'" + value.replace("'", "''") + "'"


def _alter_system(admin: Any, values: Mapping[str, str | None]) -> None:
    """``ALTER SYSTEM`` SET each value, RESET each None, then reload."""
    for name, value in values.items():
        if value is None:
            admin.execute(f"ALTER SYSTEM RESET {name}")
        else:
            admin.execute(f"ALTER SYSTEM SET {name} = {_quoted(value)}")
    admin.execute("SELECT pg_reload_conf()")
