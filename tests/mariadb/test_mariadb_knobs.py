"""MariaDB's knobs: validated against the server's own SYSTEM_VARIABLES before anything runs, durability-weakening
values flagged, and the knobs of a managed server reaching it (option file, SET GLOBAL, creation time)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from maximus import api
from maximus.engines.mariadb import MariaDBEngine
from maximus.errors import EngineError, UserError
from maximus.knobs import Applies

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


@pytest.mark.parametrize(("knobs", "error"), [
    ({"innodb_buffer_pool_sise": "1G"}, "unknown mariadb knob 'innodb_buffer_pool_sise'; did you mean "
                                        "innodb_buffer_pool_size"),
    ({"innodb_flush_log_at_trx_commit": "5"}, "bad value '5' for knob innodb_flush_log_at_trx_commit: expected "
                                              "between 0 and 3"),
    ({"innodb_flush_method": "O_DIRCT"}, "bad value 'O_DIRCT' for knob innodb_flush_method: expected one of fsync, "),
    ({"innodb_buffer_pool_size": "lots"}, "expected an integer, with K, M or G for sizes"),
    ({"innodb_page_size": "12k"}, "bad value '12k' for knob innodb_page_size: expected one of 4096, 8192"),
    ({"innodb_doublewrite": "maybe"}, "expected ON or OFF"),
    ({"datadir": "/tmp"}, "datadir is chosen by Maximus for a managed MariaDB server"),
])
def test_a_bad_knob_is_one_line_before_anything_runs(tmp_path: Path, knobs: dict, error: str) -> None:
    with pytest.raises(UserError) as caught:
        api.make_engine("mariadb", tmp_path, ONE_WAREHOUSE, knobs)
    assert error in str(caught.value) and "\n" not in str(caught.value)


def test_values_take_the_servers_spelling_and_the_page_size_gets_a_build_of_its_own(tmp_path: Path) -> None:
    engine = api.make_engine("mariadb", tmp_path, ONE_WAREHOUSE,
                             {"INNODB_BUFFER_POOL_SIZE": "256M", "innodb_doublewrite": "off",
                              "innodb_flush_method": "o_direct", "innodb_page_size": "8192"})
    assert engine.settings == {"innodb_buffer_pool_size": "268435456", "innodb_doublewrite": "OFF",
                               "innodb_flush_method": "O_DIRECT", "innodb_page_size": "8192"}
    assert engine.knobs.get("innodb_page_size").applies is Applies.CREATION
    assert engine.knobs.get("innodb_log_buffer_size").applies is Applies.RESTART  # read-only: the option file's
    assert engine.knobs.get("innodb_io_capacity").applies is Applies.RELOAD
    assert engine.database == "tpcc-1wh-innodb_page_size8192"
    assert engine.creation_settings() == {"innodb_page_size": "8192"}


@pytest.mark.parametrize(("knobs", "weakened"), [
    ({}, []),
    ({"innodb_flush_log_at_trx_commit": "2", "innodb_doublewrite": "OFF"},
     ["innodb_flush_log_at_trx_commit=2", "innodb_doublewrite=OFF"]),
    ({"innodb_flush_log_at_trx_commit": "0"}, ["innodb_flush_log_at_trx_commit=0"]),
    ({"innodb_flush_method": "littlesync"}, ["innodb_flush_method=littlesync"]),
    ({"log_bin": "ON"}, ["sync_binlog=0 with log_bin=ON"]),
    ({"log_bin": "ON", "sync_binlog": "1"}, []),
    ({"sync_binlog": "0"}, []),  # no binary log: nothing to sync
])
def test_durability_weakening_values_are_flagged(tmp_path: Path, knobs: dict, weakened: list[str]) -> None:
    warnings = MariaDBEngine(tmp_path, "db", knobs).durability_warnings()
    assert sorted(warning.removesuffix(" weakens durability") for warning in warnings) == sorted(weakened)


def test_a_managed_servers_knobs_reach_it_by_option_file_set_global_and_creation(server_workdir: Path) -> None:
    knobs = {"innodb_page_size": "8192", "log_bin": "ON", "sync_binlog": "1", "innodb_lru_flush_size": "64",
             "innodb_flush_log_at_trx_commit": "2", "innodb_log_buffer_size": "8M"}
    engine = api.make_engine("mariadb", server_workdir, ONE_WAREHOUSE, knobs)
    with api.running(engine):
        engine.provision()
        session = engine.connect()
        try:
            reported = engine.reported_settings(session)
            file_directory = session.fetchone("SELECT @@secure_file_priv")[0]
            remote_root = session.fetchone("SELECT COUNT(*) FROM mysql.user WHERE user = 'root' AND host <> "
                                           "'localhost'")[0]
        finally:
            session.close()
        assert engine.reported_otherwise(reported) == []
        # no file of the machine for whoever reaches the server: its file functions stay in its own directory,
        # and root has no account reachable over TCP (127.0.0.1 is not 'localhost' with skip-name-resolve)
        assert Path(file_directory.rstrip("/")) == engine.server.tmp_dir and remote_root == 0
        assert reported["innodb_page_size"] == "8192" and reported["log_bin"] == "ON"
        assert reported["innodb_lru_flush_size"] == "64"  # no startup option: SET GLOBAL once it runs
        assert reported["innodb_log_buffer_size"] == str(8 * 1024 * 1024)  # read-only: the option file's
        assert engine.effective_settings["performance_schema"] == reported["performance_schema"] == "ON"
        assert Path(f"/proc/{engine.server_pid()}/status").read_text().count("\nUid:\t" + _uid("mysql")) == 1
        assert engine.server.data_dir.name == "data" and "8k" in engine.server.server_dir.name
    assert engine.server_pid() is None  # stopped


def _uid(user: str) -> str:
    import pwd

    return str(pwd.getpwnam(user).pw_uid)


def test_a_value_the_server_refuses_at_start_is_one_line_and_leaves_no_server(server_workdir: Path) -> None:
    engine = MariaDBEngine(server_workdir, "scratch", {"innodb_data_file_path": "bogus"})
    with pytest.raises(EngineError, match="^MariaDB would not start: InnoDB: syntax error in file path") as caught:
        engine.start()
    assert "\n" not in str(caught.value)
    assert engine.server_pid() is None


def test_a_server_left_running_by_a_killed_maximus_is_stopped_at_the_next_start(server_workdir: Path) -> None:
    first = MariaDBEngine(server_workdir, "scratch", {})
    first.start()
    left = first.server_pid()
    first.server._process = None  # what a Maximus killed with SIGKILL leaves: the server, and no one to stop it
    second = MariaDBEngine(server_workdir, "scratch", {})
    second.start()
    try:
        assert left is not None and second.server_pid() not in (None, left)
        assert not Path(f"/proc/{left}").exists() or "Z" in Path(f"/proc/{left}/stat").read_text().split()[2]
    finally:
        second.stop()
    assert second.server_pid() is None


def test_a_crashed_server_whose_socket_is_in_tmp_leaves_no_socket_there(server_workdir: Path) -> None:
    """A work directory too deep for a Unix socket's path puts the server's socket in /tmp; a crash (SIGKILL) of the
    server leaves its socket, which the crash removes: the next start takes another port, and so another name."""
    deep = server_workdir / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    for directory in (deep.parent, deep):
        directory.chmod(0o755)
    engine = MariaDBEngine(deep, "scratch", {})
    engine.start()
    try:
        socket = engine.server.socket
        assert socket.parent == Path(tempfile.gettempdir()) and socket.is_socket()
        engine.crash()
        assert not socket.exists()
    finally:
        engine.stop()


@pytest.mark.parametrize(("error", "cause"), [
    ("IntegrityError: (1062, \"Duplicate entry '1-2013' for key 'PRIMARY'\")", None),
    ("OperationalError: (1114, \"The table 'stock' is full\")", "the disk holding"),
    ("OperationalError: (1877, \"Operation cannot be performed. The table 'x' is missing, corrupt or contains bad "
     "data.\")", "is corrupt"),
])
def test_a_faults_cause_is_read_from_its_error_code_not_from_any_number_in_it(tmp_path: Path, error: str,
                                                                             cause: str | None) -> None:
    found = MariaDBEngine(tmp_path, "fault", {}).fault(error)
    assert found is None if cause is None else cause in found


def test_a_file_innodb_could_not_extend_is_a_full_disk_when_this_starts_log_says_error_28(tmp_path: Path) -> None:
    """MariaDB's error to the client lost the errno ("Errcode: 1543832208"): the server's log has it, and only the
    part of the log this start wrote counts."""
    engine = MariaDBEngine(tmp_path, "fault", {})
    error = ("InternalError: (14, 'Can\\'t change size of file (Errcode: 1543832208 \"Unknown error 1543832208\")')")
    log = engine.server.server_log
    log.parent.mkdir(parents=True)
    said = ("2026-11-27 18:05:16 8 [ERROR] InnoDB: preallocating 79691776 bytes for file ./ibdata1 failed with "
            "error 28\n")
    log.write_text(said)  # an earlier start's
    engine.server.begin_log()
    assert engine.fault(error) == f"the MariaDB server could not write its files ({error}): its error log says why"
    log.write_text(said + said)
    assert engine.fault(error) == (f"the disk holding {engine.data_path()} is full (InnoDB: preallocating 79691776 "
                                   "bytes for file ./ibdata1 failed with error 28)")
