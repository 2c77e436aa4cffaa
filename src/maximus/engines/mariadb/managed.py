"""A managed server: a MariaDB server of Maximus's own, one per database, in the work directory.

``mariadb-install-db`` creates its data directory once (with the creation-time knob ``innodb_page_size``), an
option file (``maximus.cnf``) gets the run's knobs, and ``mariadbd`` starts on a free loopback port with its own
socket, as the unprivileged ``mysql`` user when Maximus runs as root, in a session of its own (a Ctrl-C to
Maximus's process group is not the server's). Its pid file lies in its directory: a server left behind by a
Maximus that was killed is found there and stopped before the next start.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

from maximus.engines import _process, server
from maximus.engines.server.log import first_error
from maximus.engines.mariadb.servers import COLUMNS, MariaDBServer, connect, is_error, message, query_variables
from maximus.engines.mariadb.settings import (LOG_BIN, OWNED, PAGE_SIZE, MariaValue, catalogue_of, option_line,
                                              refuse_read_only, set_global)
from maximus.errors import EngineError, UserError
from maximus.knobs import KnobCatalogue

SERVER_USER = os.environ.get("MAXIMUS_MARIADB_USER", "mysql")
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 120
_SUN_PATH_MAX = 107  # sockaddr_un.sun_path holds 108 bytes, the last a NUL
# What a managed server gets beside the run's knobs, unless a knob says otherwise: performance_schema for the
# sampler's wait events (off by default), LOAD DATA LOCAL for the build, and a binary collation, so that names
# sort as PostgreSQL's C locale sorts them (Payment and Order-Status choose a customer by the order of C_FIRST);
# with the binary log on (log_bin), the TPC-C functions can be created only when their creator is trusted.
CHOSEN = {"performance_schema": "ON", "local_infile": "ON", "character_set_server": "utf8mb4",
          "collation_server": "utf8mb4_bin", "log_bin_trust_function_creators": "ON"}


def _binary(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin")
    if found is None:
        raise UserError(f"{name} not found: install mariadb-server (apt-get install mariadb-server)")
    return found


@lru_cache(maxsize=1)
def server_version() -> str:
    """``10.11.19`` of ``mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu``."""
    found = _process.run([_binary("mariadbd"), "--version"], "mariadbd --version")
    match = re.search(r"Ver\s+(\d+\.\d+\.\d+)", found)
    return match.group(1) if match else found.split()[2]


def major() -> str:
    return ".".join(server_version().split(".")[:2])


def chown_to_server_user(path: Path) -> None:
    """One file Maximus wrote into the server's data directory, made the server user's."""
    if _process.running_as_root():
        user = pwd.getpwnam(SERVER_USER)
        os.chown(path, user.pw_uid, user.pw_gid)


class ManagedServer(MariaDBServer, server.ManagedServer):
    """The server of one database: ``mariadb-<version>-<page size>k-<database>/`` in the work directory."""

    place = "server"
    default_connections = 151
    stopped_marks = ("[ERROR]", "Shutdown complete")  # a server alive is not stopping, whatever its log says
    message, is_error = staticmethod(message), staticmethod(is_error)

    def __init__(self, workdir: Path, database: str, settings: dict[str, str], knobs: KnobCatalogue,
                 connection: Mapping[str, str]) -> None:
        super().__init__(workdir, database, settings, knobs, connection)
        owned = sorted(name for name in settings if name in OWNED)
        if owned:
            raise UserError(f"{', '.join(owned)} {'is' if len(owned) == 1 else 'are'} chosen by Maximus for a managed "
                            "MariaDB server (its directory, socket and port)")
        refuse_read_only(settings)
        self._process: subprocess.Popen | None = None

    def __getstate__(self) -> dict[str, Any]:
        """A copy for a worker process (engines are picklable values): the server's process is this one's to
        stop and reap, not the copy's."""
        return {**self.__dict__, "_process": None}

    @classmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        return catalogue_of(installation_variables())

    # -- where things live ---------------------------------------------------------------------------

    @property
    def page_size(self) -> int:
        default = self.knobs.get(PAGE_SIZE).default if PAGE_SIZE in self.knobs else "16384"
        return int(self.settings.get(PAGE_SIZE) or default)

    @property
    def server_dir(self) -> Path:
        # absolute: the server reads a relative datadir or pid-file against its basedir (/usr), not our directory
        return self.workdir.absolute() / f"mariadb-{major()}-{self.page_size // 1024}k-{self.database}"

    @property
    def tmp_dir(self) -> Path:
        return self.server_dir / "tmp"

    @property
    def option_file(self) -> Path:
        return self.server_dir / "maximus.cnf"

    def pid_file(self) -> Path | None:
        return self.server_dir / "mariadbd.pid"

    @property
    def server_user(self) -> str:
        return SERVER_USER

    @property
    def socket(self) -> Path:
        """In the server's directory; in /tmp when that path would not fit in ``sun_path``."""
        own = (self.server_dir / "mariadbd.sock").absolute()
        if len(os.fsencode(own)) <= _SUN_PATH_MAX:
            return own
        return Path(tempfile.gettempdir()) / f"maximus-mariadb-{self.port}.sock"

    def pristine_files(self) -> tuple[Path, Path, Callable[[Path], None]] | None:
        return self.data_dir, self.server_dir / "pristine", chown_to_server_user

    def version(self, reported: str | None) -> str:
        return server_version()

    def remove_data(self) -> bool:
        """The log (and the pid file of a server that crashed) stay: they tell why the build failed."""
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        return True

    def connect_arguments(self) -> dict[str, Any]:
        if self.port is None:
            raise EngineError("cannot connect to MariaDB: the managed server is not running (start() it first)")
        return {"unix_socket": str(self.socket), "user": "root"}

    def chosen_settings(self) -> dict[str, str]:
        return {name: value for name, value in CHOSEN.items() if name not in self.settings}

    # -- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> None:
        self._install()
        self.stop_leftover()
        self.port = _process.free_port()
        self._write_options()
        self.begin_log()
        server = [_binary("mariadbd"), f"--defaults-file={self.option_file}"]
        self._process = subprocess.Popen(_process.in_place_as(SERVER_USER, server),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            self._await_ready()
            self._local_root_only()
            self._set_runtime_knobs()
        except BaseException:
            self.stop()
            raise

    def _await_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process is not None and self._process.poll() is not None:
                raise EngineError(f"MariaDB would not start: {self.log.first_error()} (log: {self.server_log})")
            try:
                connect(self.connect_arguments()).close()
                return
            except EngineError:
                if time.monotonic() > deadline:
                    raise EngineError(f"MariaDB did not accept connections within {START_TIMEOUT_S} s: "
                                      f"{self.log.first_error()} (log: {self.server_log})") from None
                time.sleep(0.05)

    def _local_root_only(self) -> None:
        """mariadb-install-db gives root passwordless accounts at 127.0.0.1, ::1 and the host's name too: any user
        of the machine could reach those over TCP during a run. Maximus connects by the socket, as root@localhost."""
        connection = connect(self.connect_arguments())
        try:
            connection.query(b"SELECT host FROM mysql.user WHERE user = 'root' AND host <> 'localhost'")
            hosts = [row[0] for row in connection.store_result().fetch_row(0)]
            for host in hosts:
                connection.query(b"DROP USER 'root'@" + connection.string_literal(host))
        finally:
            connection.close()

    def _set_runtime_knobs(self) -> None:
        """Knobs without a startup option (``SET GLOBAL`` only), once the server is up."""
        later = {name: value for name, value in self.settings.items()
                 if name != LOG_BIN and _set_at_runtime_only(self.knobs.get(name).type)}
        if not later:
            return
        import MySQLdb

        connection = connect(self.connect_arguments())
        try:
            for name, value in later.items():
                try:
                    connection.query(set_global(name, value, self.knobs).encode())
                except MySQLdb.Error as error:
                    raise EngineError(f"MariaDB refused {name}={value}: {error.args[-1]}") from None
        finally:
            connection.close()

    def stop(self) -> None:
        pid = self.pid()
        if pid is not None and _process.alive(pid) and self.ours(pid):
            self.stop_process(pid)
        elif self._process is not None and self._process.poll() is None:
            _terminate(self._process.pid)  # stopped while starting, before it wrote its pid file (setpriv execs it)
        if self._process is not None:
            try:
                self._process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        self.port = None

    def ours(self, pid: int) -> bool:
        return str(self.option_file) in _process.command_line(pid)

    def left_by_crash(self, mapped: list[Path]) -> list[Path]:
        """Its socket, when it is in /tmp (a server directory too deep for ``sun_path``): it would stay there after
        the work directory is gone, one per crash test, for the next start takes another port."""
        return [self.socket] if self.socket.parent == Path(tempfile.gettempdir()) else []

    def stop_process(self, pid: int) -> None:
        _terminate(pid)

    def _install(self) -> None:
        if (self.data_dir / "mysql").is_dir():
            return
        self.make_server_dir()
        shutil.rmtree(self.data_dir, ignore_errors=True)  # what an install cut short left
        self._tmpdir()
        # A temporary directory of its own: bootstraps sharing /tmp at the same time collide on their temporary
        # tables' names ("Unknown table 'mysql.tmp_user_sys'").
        install = [_binary("mariadb-install-db"), "--no-defaults", f"--datadir={self.data_dir}",
                   f"--tmpdir={self.tmp_dir}", "--auth-root-authentication-method=normal", "--skip-test-db",
                   f"--innodb-page-size={self.page_size}"]
        command = _process.in_place_as(SERVER_USER, install)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as error:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise EngineError(f"mariadb-install-db failed: {error}") from None
        if done.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            lines = (done.stderr + done.stdout).splitlines()
            said = first_error(lines, message, is_error) if any(map(str.strip, lines)) else \
                f"exit code {done.returncode}"
            raise EngineError(f"mariadb-install-db failed in {self.data_dir}: {said}")

    def _tmpdir(self) -> None:
        if not self.tmp_dir.is_dir():
            self.tmp_dir.mkdir()
            chown_to_server_user(self.tmp_dir)

    def _write_options(self) -> None:
        self._tmpdir()
        places = {"datadir": self.data_dir, "tmpdir": self.tmp_dir, "socket": self.socket, "pid-file": self.pid_file(),
                  "log-error": self.server_log,  # quoted where needed: a '#' in a path would start a comment
                  # the server's own file functions (LOAD_FILE, INTO OUTFILE) only in its directory: without it,
                  # anyone who reaches the server could read and write files as its user
                  "secure-file-priv": self.tmp_dir}
        lines = ["# written by Maximus for this run", "[mariadbd]",
                 *(option_line(name, str(path)) for name, path in places.items()),
                 f"port = {self.port}", "bind-address = 127.0.0.1", "skip-name-resolve",
                 f"innodb_page_size = {self.page_size}"]
        if self.settings.get(LOG_BIN) == "ON":
            lines += [option_line("log-bin", str(self.server_dir / "binlog")), "server_id = 1"]
        options = {**self.chosen_settings(), **self.settings}
        lines += [option_line(name, value) for name, value in options.items()
                  if name not in (LOG_BIN, PAGE_SIZE) and (name not in self.knobs or self._is_option(name))]
        self.option_file.write_text("\n".join(lines) + "\n")
        self.option_file.chmod(0o644)

    def _is_option(self, name: str) -> bool:
        value_type = self.knobs.get(name).type
        return not isinstance(value_type, MariaValue) or value_type.option


def _terminate(pid: int) -> None:
    """SIGTERM (a clean shutdown), then SIGKILL when it takes longer than ``STOP_TIMEOUT_S``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _process.alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
        time.sleep(0.02)


@lru_cache(maxsize=1)
def installation_variables() -> tuple[dict, ...]:
    """SYSTEM_VARIABLES of the installed server's version, cached on disk per version: read from a throwaway
    server, created and started for it."""
    return server.cached_rows(f"mariadb-system-variables-{server_version()}.json", variables_from_throwaway_server,
                              lambda rows: bool(rows) and all(COLUMNS <= set(row) for row in rows))


def variables_from_throwaway_server() -> tuple[dict, ...]:
    # The catalogue is what this server is started to read: it has no knobs.
    def catalogue_server(scratch: Path) -> ManagedServer:
        return ManagedServer(scratch, "catalogue", {}, KnobCatalogue("mariadb", []), {})

    with server.throwaway(catalogue_server, "mariadb") as started:
        return query_variables(started.connect_arguments())


def _set_at_runtime_only(value_type: object) -> bool:
    """A variable the server takes by SET GLOBAL only, not as a startup option."""
    return isinstance(value_type, MariaValue) and not value_type.option
