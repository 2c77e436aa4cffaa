"""MariaDB's faults (#44) end as the other engines' do: one line naming the real cause, exit code 2 for the user's input
and 3 for the engine's or the system's state, no run stored for what measured nothing, nothing left running or
changed. On real servers: managed ones the commands start, and one the tests start as a user's server (``--dsn``)."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

from maximus.engines.mariadb import MariaDBEngine
from maximus.engines.mariadb.external import dsn_arguments
from maximus.engines.mariadb.servers import connect

RUN = ("run", "-e", "mariadb", "-w", "1", "-t", "1", "--warmup", "0", "-d", "1")


def _statements(connection: Any, *statements: str) -> list[tuple]:
    """Each statement run in turn; the last one's rows."""
    rows: list[tuple] = []
    for statement in statements:
        connection.query(statement.encode())
        result = connection.store_result()
        rows = list(result.fetch_row(0)) if result is not None else []
    return rows


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def server_data(workdir: Path) -> str:
    """The data directory of the managed server of tpcc-1wh in ``workdir``, as a pattern."""
    return re.escape(str(workdir)) + r"/mariadb-[\d.]+-16k-tpcc-1wh/data"


@pytest.fixture(scope="module")
def users_server(server_workdir: Path) -> Iterator[dict[str, str]]:
    """A running server, as a user's would be, with accounts of the user's reached over TCP by their DSNs: ``admin``
    (every privilege), ``nobody`` (none), ``bench`` (every privilege on Maximus's databases, BINLOG ADMIN, but not
    SUPER, which most SET GLOBALs need), ``reader`` (may create, drop and read Maximus's databases, not write them)."""
    owner = MariaDBEngine(server_workdir, "faults-dsn", {})
    owner.start()
    try:
        root = connect(owner.server.connect_arguments())
        try:
            _statements(root, "CREATE USER IF NOT EXISTS 'admin'@'127.0.0.1' IDENTIFIED BY 'pw'",
                        "GRANT ALL PRIVILEGES ON *.* TO 'admin'@'127.0.0.1'",
                        "CREATE USER IF NOT EXISTS 'nobody'@'127.0.0.1' IDENTIFIED BY 'pw'",
                        "CREATE USER IF NOT EXISTS 'bench'@'127.0.0.1' IDENTIFIED BY 'pw'",
                        "GRANT ALL PRIVILEGES ON `tpcc-1wh%`.* TO 'bench'@'127.0.0.1'",
                        "GRANT BINLOG ADMIN ON *.* TO 'bench'@'127.0.0.1'",
                        "CREATE USER IF NOT EXISTS 'reader'@'127.0.0.1' IDENTIFIED BY 'pw'",
                        "GRANT CREATE, DROP, SELECT ON `tpcc-1wh%`.* TO 'reader'@'127.0.0.1'")
        finally:
            root.close()
        port = owner.server.port
        yield {user: f"mysql://{user}:pw@127.0.0.1:{port}/mysql" for user in ("admin", "nobody", "bench", "reader")}
    finally:
        owner.stop()


@pytest.fixture(autouse=True)
def own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands' journal of changes to a server of the user's in a directory of the test's own, not the home's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def traversable() -> Iterator[Path]:
    """A directory of the test's own that a managed server's user can traverse (pytest's own is private)."""
    path = Path(tempfile.mkdtemp(prefix="maximus-faults-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _as_admin(dsns: dict[str, str], *statements: str) -> list[tuple]:
    connection = connect(dsn_arguments(dsns["admin"]))
    try:
        return _statements(connection, *statements)
    finally:
        connection.close()


def _maximus_databases(dsns: dict[str, str]) -> list[str]:
    return [_text(name) for (name,) in _as_admin(dsns, "SHOW DATABASES LIKE 'tpcc-%'")]


def test_a_build_that_fills_the_disk_names_the_full_disk_and_leaves_the_server_as_it_was(harness, small_disks) -> None:
    """InnoDB's error to the client, "Can't change size of file (Errcode: <garbage>)", lost the errno: the server's
    log has it (error 28). The half-loaded database is dropped, and no run is stored: nothing was measured."""
    with small_disks.mount(200) as disk:  # the server's files take about 115 MB, its redo log most of it
        workdir = disk / "work"
        result = harness.run(*RUN, "--workdir", str(workdir), "--results", str(harness.results))
        assert result.returncode == 3, result.stderr
        line = harness.one_error(result.stderr)
        # which file InnoDB fails to extend first depends on the loaders' timing: the system tablespace (the undo of
        # the load), whose error to the client lost its errno, or a table's own; and a rollback that finds no space
        # aborts the server
        assert re.fullmatch(rf"error: the build of tpcc-1wh failed: the disk holding {server_data(workdir)} is full"
                            r"(, and the MariaDB server stopped)? \((InnoDB: preallocating \d+ bytes for file "
                            r"\./ibdata1 failed with error 28|OperationalError: \(1114, \"The table '\w+' is full\"\)"
                            r")\)", line), line
        harness.assert_nothing_left(disk)
        assert not harness.runs()
        # the server's data directory (this database's alone) and pristine copy removed whole: dropping the database
        # would leave the load's undo in InnoDB's system tablespace, which never shrinks; the log stays
        (log,) = workdir.glob("mariadb-*-tpcc-1wh/server.log")
        assert not list(workdir.glob("mariadb-*/data")) and not list(workdir.glob("mariadb-*/pristine*"))
        assert "failed with error 28" in log.read_text()
        assert small_disks.used_mb(disk) < 1
        small_disks.resize(disk, 600)  # room made: the next build makes the server again
        again = harness.run("load", "-e", "mariadb", "--workdir", str(workdir))
        assert again.returncode == 0, again.stderr
        harness.assert_nothing_left(disk)


def test_a_read_only_innodb_is_refused_before_anything_runs(harness, server_workdir: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    result = harness.run(*RUN, "-k", "innodb_read_only=ON", "--workdir", str(workdir), "--results",
                         str(harness.results))
    assert result.returncode == 2, result.stderr
    assert harness.one_error(result.stderr) == (
        "error: innodb_read_only=ON makes the MariaDB server refuse every write, and a benchmark writes (its build, "
        "its restores, its transactions): drop the knob")
    assert not workdir.exists() and not harness.results.exists()
    harness.assert_nothing_left(tmp_path)


def test_a_users_server_that_runs_read_only_is_one_line_before_anything_runs(harness, server_workdir: Path,
                                                                             tmp_path: Path) -> None:
    """A server of the user's started with innodb_read_only=ON (which a managed server's knobs refuse: the test
    writes its option file itself) takes no build: one line, exit 3, nothing stored, the server as it was."""
    owner = MariaDBEngine(server_workdir, "faults-read-only", {})
    owner.server.settings["innodb_read_only"] = "ON"  # the option file's, as a user's configuration has it
    owner.server.start()  # the server alone: the engine's start would refuse it as the run's does
    try:
        root = connect(owner.server.connect_arguments())
        try:
            _statements(root, "CREATE USER IF NOT EXISTS 'dba'@'127.0.0.1' IDENTIFIED BY 'pw'",
                        "GRANT ALL PRIVILEGES ON *.* TO 'dba'@'127.0.0.1'")
        finally:
            root.close()
        result = harness.run(*RUN, "--dsn", f"mysql://dba:pw@127.0.0.1:{owner.server.port}/mysql", "--workdir",
                             str(tmp_path / "work"), "--results", str(harness.results))
    finally:
        owner.server.stop()
    assert result.returncode == 3, result.stderr
    assert harness.one_error(result.stderr) == (
        "error: the MariaDB server runs with innodb_read_only=ON: it refuses every write, and a benchmark writes (its "
        "build, its restores, its transactions): use a server that takes writes")
    assert not harness.runs()
    harness.assert_nothing_left(tmp_path)


def test_character_sets_and_collations_are_knobs_with_any_value_the_server_takes(harness, traversable: Path) -> None:
    """SYSTEM_VARIABLES lists no values for these ENUMs: every value was refused, Maximus's own utf8mb4 too."""
    workdir = traversable / "work"
    knobs = {"character_set_server": "utf8mb4", "collation_server": "utf8mb4_unicode_ci",
             "character_set_client": "utf8mb4"}
    result = harness.run(*RUN, *[arg for name, value in knobs.items() for arg in ("-k", f"{name}={value}")],
                         "--workdir", str(workdir), "--results", str(harness.results))
    assert result.returncode == 0, result.stderr
    (run,) = harness.runs()
    assert run.status.value == "complete" and run.spec.knobs == knobs
    assert {name: run.engine_settings[name] for name in knobs} == knobs  # as the server reported them
    assert not [warning for warning in run.warnings if "was asked" in warning]
    harness.assert_nothing_left(workdir)


@pytest.mark.parametrize(("user", "refused"), [
    ("nobody", "run DROP DATABASE `tpcc-1wh` (it lacks DROP: Access denied for user 'nobody'@'127.0.0.1' to database "
               "'tpcc-1wh')"),
    ("reader", "run INSERT INTO `tpcc-1wh`.maximus_probe ... (it lacks INSERT: INSERT command denied to user "
               "'reader'@'127.0.0.1' for table `tpcc-1wh`.`maximus_probe`)"),
])
def test_a_user_who_may_not_create_drop_or_write_maximuss_databases_is_one_line(harness, users_server, tmp_path,
                                                                                user: str, refused: str) -> None:
    """Before anything is built: a user who may create the database but not write it fails now, where the loader's
    first LOAD DATA did, in a traceback."""
    result = harness.run(*RUN, "--dsn", users_server[user], "--workdir", str(tmp_path / "work"), "--results",
                         str(harness.results))
    assert result.returncode == 2, result.stderr
    assert harness.one_error(result.stderr) == (
        f"error: your MariaDB user may not {refused}: give it every privilege on Maximus's databases, GRANT ALL "
        "PRIVILEGES ON `tpcc-1wh%`.* TO the user")
    assert not harness.runs() and not _maximus_databases(users_server)
    harness.assert_nothing_left(tmp_path)


def test_a_set_global_without_the_privilege_names_it_and_puts_back_only_what_changed(harness, users_server,
                                                                                       tmp_path) -> None:
    """binlog_format is set (BINLOG ADMIN), innodb_io_capacity is refused (SUPER): the first is put back, the second
    was never changed, and the line says why with no put-back for the user to do."""
    before = _as_admin(users_server, "SELECT @@GLOBAL.binlog_format, @@GLOBAL.innodb_io_capacity")
    result = harness.run(*RUN, "--dsn", users_server["bench"], "--allow-changes", "-k", "binlog_format=STATEMENT",
                         "-k", "innodb_io_capacity=1000", "--workdir", str(tmp_path / "work"), "--results",
                         str(harness.results))
    assert result.returncode == 2, result.stderr
    line = harness.one_error(result.stderr)
    assert line == ("error: your MariaDB user may not set innodb_io_capacity (SET GLOBAL innodb_io_capacity = 1000: "
                    "Access denied; you need (at least one of) the SUPER privilege(s) for this operation): grant it "
                    "SUPER, or run without the knob"), line
    assert _as_admin(users_server, "SELECT @@GLOBAL.binlog_format, @@GLOBAL.innodb_io_capacity") == before
    assert not harness.runs() and not _maximus_databases(users_server)
    harness.assert_nothing_left(tmp_path)


@pytest.mark.parametrize(("port", "said"), [("99999", "the port 99999 is out of range: a TCP port is 1 to 65535"),
                                            ("0", "the port 0 is out of range: a TCP port is 1 to 65535"),
                                            ("3o6", "the port '3o6' is not a number")])
def test_a_dsns_port_out_of_range_is_not_called_not_a_number(harness, tmp_path: Path, port: str, said: str) -> None:
    result = harness.run(*RUN, "--dsn", f"mysql://u:secret@127.0.0.1:{port}/db", "--workdir", str(tmp_path / "w"),
                         "--results", str(harness.results))
    assert result.returncode == 2, result.stderr
    assert harness.one_error(result.stderr) == f"error: bad MariaDB --dsn 'mysql://u:***@127.0.0.1:{port}/db': {said}"
    assert not harness.results.exists()


@pytest.mark.parametrize(("size", "pages"), [("64k", "64k"), ("4K", "4k")])
def test_the_page_size_takes_the_sizes_mariadbd_takes(harness, traversable: Path, size: str, pages: str) -> None:
    """``innodb_page_size=64k`` as mariadbd reads it: a server of 64-KiB pages, and a build of its own."""
    workdir = traversable / "work"
    result = harness.run("load", "-e", "mariadb", "-k", f"innodb_page_size={size}", "--workdir", str(workdir),
                         timeout=300)
    assert result.returncode == 0, result.stderr
    (server,) = workdir.glob(f"mariadb-*-{pages}-tpcc-1wh-innodb_page_size*")
    assert server.name.endswith(f"innodb_page_size{int(pages[:-1]) * 1024}")
    harness.assert_nothing_left(workdir)


def test_a_set_global_left_by_a_killed_maximus_is_put_back_by_the_next_command_on_that_server(
        harness, users_server, traversable: Path, monkeypatch) -> None:
    """A SIGKILL leaves no one to put back the run's SET GLOBAL: the journal beside Maximus's state does, at the next
    command that uses the server, before it reads what the server runs with."""
    monkeypatch.setenv("XDG_STATE_HOME", str(traversable / "state"))  # the commands' journal, where the test reads it
    io_capacity = "SELECT @@GLOBAL.innodb_io_capacity"
    before = _as_admin(users_server, io_capacity)
    where = ("--workdir", str(traversable / "work"), "--results", str(harness.results))
    try:
        killed = harness.spawn("run", "-e", "mariadb", "-w", "1", "-t", "1", "--warmup", "0", "-d", "120", "--dsn",
                               users_server["admin"], "--allow-changes", "-k", "innodb_io_capacity=1000", *where)
        harness.running_run(killed)
        killed.kill()
        killed.wait()
        assert _as_admin(users_server, io_capacity) == [(1000,)]  # left changed, with no one to put it back
        result = harness.run(*RUN, "--dsn", users_server["admin"], *where)
        assert result.returncode == 0, result.stderr
        assert (f"note: your MariaDB server: put back innodb_io_capacity={before[0][0]}, left changed by a Maximus "
                f"that was killed (process {killed.pid})") in " ".join(result.stdout.split()), result.stdout
        assert _as_admin(users_server, io_capacity) == before
        assert harness.runs()[-1].effective_knobs["innodb_io_capacity"] == str(before[0][0])  # measured as it was
        assert not list((traversable / "state").rglob("*.json"))
        harness.assert_nothing_left(traversable)
    finally:
        _as_admin(users_server, "DROP DATABASE IF EXISTS `tpcc-1wh`", "DROP DATABASE IF EXISTS `tpcc-1wh_pristine`")


def test_a_wrong_password_in_the_dsn_is_the_users_input(harness, users_server, tmp_path: Path) -> None:
    wrong = users_server["admin"].replace(":pw@", ":not-the-password@")
    result = harness.run(*RUN, "--dsn", wrong, "--workdir", str(tmp_path / "work"), "--results", str(harness.results))
    assert result.returncode == 2, result.stderr
    line = harness.one_error(result.stderr)
    assert line.startswith("error: MariaDB refused the user and password of --dsn (Access denied for user 'admin'")
    assert line.endswith("): check them")
    assert not harness.runs()
    harness.assert_nothing_left(tmp_path)
