"""A managed server: a throwaway cluster in the work directory, one per PostgreSQL version.

Maximus runs ``initdb`` once per work directory and version, writes the run's knobs into ``maximus.conf``
(included by ``postgresql.conf``), starts the server on a free loopback port as an unprivileged user when
invoked as root, and stops it when done. A server left behind by a Maximus that was killed is found by its
``postmaster.pid`` in our data directory and stopped.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from maximus.engines import _process, server
from maximus.engines.postgres import segments
from maximus.engines.postgres.catalogue import catalogue_of, query_settings
from maximus.engines.postgres.servers import PostgresServer, is_error, message
from maximus.engines.postgres.settings import BIN_DIR, BinDirValue, find_bin_dir, full_version, major, server_knobs
from maximus.errors import EngineError, UserError
from maximus.knobs import Applies, Knob, KnobCatalogue
from maximus.samplers.postgres import IO_TIMING, WAL_IO_TIMING

# What the sampler needs to time data-file reads and WAL writes and syncs; a managed server gets them on
# unless the run's knobs say otherwise (the sampler's notes then record that Maximus did it).
_MONITORING_SETTINGS = {IO_TIMING: "on", WAL_IO_TIMING: "on"}
# How a managed server's log says that it stopped, or is stopping.
STOPPED = ("shutdown request", "PANIC:  ", "unexpected postmaster exit")
_SUN_PATH_MAX = 107  # sockaddr_un.sun_path holds 108 bytes, the last a NUL


class ManagedServer(PostgresServer, server.ManagedServer):
    """A cluster of Maximus's, its binaries chosen by the ``bin_dir`` knob or connection option."""

    place, main_process = "cluster", "postmaster, process"
    default_connections = 100
    stopping_marks = stopped_marks = STOPPED
    message, is_error = staticmethod(message), staticmethod(is_error)

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        super().__init__(workdir, database, settings, knobs, connection)
        self.socket_dir: Path | None = None  # where the server's Unix-domain socket is, if anywhere

    @classmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        """The installation's settings, and ``bin_dir``, which installation runs the server."""
        bin_dir = Knob(BIN_DIR, BinDirValue(), str(find_bin_dir(connection.get(BIN_DIR))), Applies.RESTART,
                       "The PostgreSQL installation whose initdb, pg_ctl and postgres run the managed server")
        return catalogue_of(installation_settings(connection.get(BIN_DIR, "")), [bin_dir])

    @classmethod
    def catalogue_for(cls, settings: Mapping[str, object], connection: Mapping[str, str]) -> KnobCatalogue:
        """With a ``bin_dir`` knob, the settings of that installation's version validate the other knobs."""
        given = settings.get(BIN_DIR)
        if given is None:
            return cls.catalogue(connection)
        try:
            return cls.catalogue({**connection, BIN_DIR: str(find_bin_dir(str(given).strip()))})
        except UserError as error:
            raise UserError(f"bad value {given!r} for knob {BIN_DIR}: {error}") from None

    # -- where things live ---------------------------------------------------------------------------

    @property
    def bin_dir(self) -> Path:
        return find_bin_dir(self.settings.get(BIN_DIR) or self.connection.get(BIN_DIR))

    @property
    def cluster_dir(self) -> Path:
        """One per major version, shared by every database of the work directory."""
        return self.workdir / f"postgres-{major(self.bin_dir)}"

    @property
    def server_dir(self) -> Path:
        return self.cluster_dir

    @property
    def server_user(self) -> str:
        return _process.SERVER_USER

    def pid_file(self) -> Path | None:
        return self.data_dir / "postmaster.pid"

    def version(self, reported: str | None) -> str:
        return full_version(self.bin_dir)

    def dsn(self, database: str) -> str:
        if self.port is None:
            raise EngineError("the PostgreSQL server is not running: start() it first")
        from psycopg.conninfo import make_conninfo

        host = str(self.socket_dir) if self.socket_dir else "127.0.0.1"
        return make_conninfo(host=host, port=self.port, user="postgres", dbname=database)

    # -- the run's configuration ---------------------------------------------------------------------

    def chosen_settings(self) -> dict[str, str]:
        return {BIN_DIR: str(self.bin_dir)}

    def monitoring_settings(self) -> dict[str, str]:
        """The sampler's timing settings that the run's knobs leave unset (and this version has)."""
        return {name: value for name, value in _MONITORING_SETTINGS.items()
                if name not in self.settings and name in self.knobs}

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        self._initdb()
        self.stop_leftover()
        self.await_dead_server()
        self.port = int(server_knobs(self.settings).get("port") or _process.free_port())  # -k port=N: the user's
        users_sockets = "unix_socket_directories" in self.settings  # a knob of the user's: connect over TCP
        self.socket_dir = None if users_sockets else _socket_directory(self.cluster_dir, self.port)
        self._write_config()
        self.begin_log()
        try:
            self._pg_ctl("-l", str(self.server_log), "-w", "-t", "120", "start", what="starting PostgreSQL")
        except EngineError:
            raise EngineError(f"PostgreSQL would not start: {self.log.first_error()} (log: {self.server_log})") \
                from None

    def stop(self) -> None:
        pid = self.pid()
        if pid is None or not _process.alive(pid):  # not started, or already gone (killed, crashed): nothing to
            return  # stop; its stale postmaster.pid stays, for the next start's own check of its shared memory
        self.stop_process(pid)

    def stop_process(self, pid: int) -> None:
        self._pg_ctl("-m", "fast", "-w", "-t", "120", "stop", what="stopping PostgreSQL")

    def ours(self, pid: int) -> bool:
        return str(self.data_dir) in _process.command_line(pid)

    def left_by_crash(self, mapped: list[Path]) -> list[Path]:
        return segments.listed(mapped)

    def _pg_ctl(self, *arguments: str, what: str) -> None:
        _process.run(_process.as_server_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *arguments]),
                     what)

    def _initdb(self) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            return
        self.make_server_dir()
        _process.run(_process.as_server_user([str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U",
                                              "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"]),
                     "initdb", timeout=300)
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write("\ninclude_if_exists = 'maximus.conf'\n")

    def _write_config(self) -> None:
        sockets = {"unix_socket_directories": str(self.socket_dir or "")}
        lines = [f"port = {self.port}", "listen_addresses = '127.0.0.1'"]
        lines += [f"{name} = {_conf_quoted(value)}"
                  for name, value in {**sockets, **self.monitoring_settings(), **server_knobs(self.settings)}.items()]
        path = self.data_dir / "maximus.conf"
        path.write_text("# written by Maximus for this run\n" + "\n".join(lines) + "\n")
        _process.give_to_server_user(path)


def _socket_directory(cluster_dir: Path, port: int) -> Path | None:
    """Where a managed server's Unix-domain socket goes: its cluster's directory, made absolute (libpq takes
    a relative path for a host name), which every client of the run then connects to instead of TCP
    loopback (docs/postgres.md: the machine spends less CPU per transaction). None when the socket's path
    would not fit in ``sun_path`` or PostgreSQL's list syntax would split or trim it: then clients use TCP."""
    directory = cluster_dir.absolute()
    text = str(directory)
    if len(os.fsencode(directory / f".s.PGSQL.{port}")) > _SUN_PATH_MAX or text != text.strip() \
            or "," in text or '"' in text:
        return None
    return directory


def _conf_quoted(value: str) -> str:
    """A value as a single-quoted string of postgresql.conf, where a backslash starts an escape (``\\n``)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"


@lru_cache(maxsize=8)
def installation_settings(bin_dir: str) -> tuple[dict, ...]:
    """pg_settings of an installation's version (``bin_dir``, or the one found), cached on disk per version:
    read from a throwaway cluster of its binaries."""
    binaries = find_bin_dir(bin_dir or None)
    return server.cached_rows(f"pg_settings-{full_version(binaries)}.json",
                              lambda: settings_from_throwaway_cluster(binaries))


def settings_from_throwaway_cluster(bin_dir: Path) -> tuple[dict, ...]:
    # The catalogue is what this cluster is started to read: it has no knobs.
    def cluster(scratch: Path) -> ManagedServer:
        return ManagedServer(scratch, "postgres", {}, KnobCatalogue("postgres", []), {BIN_DIR: str(bin_dir)})

    with server.throwaway(cluster, "pg") as started:
        return query_settings(started.dsn("postgres"))
