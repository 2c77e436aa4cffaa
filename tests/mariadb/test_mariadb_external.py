"""External mode: a MariaDB server the user owns, named by --dsn (here one the test starts). Maximus reads its
variables, changes them only with --allow-changes and puts them back, and refuses what a restart would need."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterator

import pytest

from maximus.engines.mariadb import MariaDBEngine
from maximus.engines.mariadb.external import dsn_arguments
from maximus.engines.mariadb.servers import connect
from maximus.errors import UserError
from maximus.records import Window
from maximus.records import MetricSample
from maximus.samplers.mariadb import MariaDBSampler
from maximus.samplers.monitor import Monitor


@pytest.fixture(scope="module")
def dsn(server_workdir: Path) -> Iterator[str]:
    """A running server, as a user's would be: reached over TCP by its DSN, as an account of the user's (a managed
    server's root is reachable by its socket only)."""
    owner = MariaDBEngine(server_workdir, "scratch", {})  # the server of the knobs tests, when on this worker
    owner.start()
    try:
        admin = connect(owner.server.connect_arguments())
        try:
            admin.query(b"CREATE USER IF NOT EXISTS 'dba'@'127.0.0.1' IDENTIFIED BY 'pw';"
                        b"GRANT ALL PRIVILEGES ON *.* TO 'dba'@'127.0.0.1' WITH GRANT OPTION")
            while admin.next_result() == 0:
                pass
        finally:
            admin.close()
        yield f"mysql://dba:pw@127.0.0.1:{owner.server.port}/mysql"
    finally:
        owner.stop()


def test_knobs_change_only_with_leave_and_are_put_back(dsn: str, server_workdir: Path) -> None:
    with pytest.raises(UserError, match="only with --allow-changes"):
        MariaDBEngine(server_workdir, "external", {"innodb_lock_wait_timeout": "9"}, {"dsn": dsn}).start()
    engine = MariaDBEngine(server_workdir, "external", {"innodb_lock_wait_timeout": "9", "join_buffer_size": "1000"},
                           {"dsn": dsn, "allow_changes": "yes"})
    assert not engine.manages_server and engine.lock_target() is None
    engine.start()
    try:
        engine.provision()
        session = engine.connect()
        try:
            assert session.fetchone("SELECT @@GLOBAL.innodb_lock_wait_timeout") == (9,)
            reported = engine.reported_settings(session)
            # what the run records is what the server runs with: it rounds a join buffer to its 128-byte blocks
            assert {name: engine.effective_settings[name] for name in engine.settings} == {
                "innodb_lock_wait_timeout": "9", "join_buffer_size": "896"} == {
                name: reported[name] for name in engine.settings}
            assert engine.settings["join_buffer_size"] == "1000"  # the knob as asked, recorded with the run apart
            assert engine.reported_otherwise(reported) == ["join_buffer_size=1000 was asked, but mariadb reports 896"]
            assert engine.effective_settings["innodb_buffer_pool_size"] == "134217728"  # the server's own, recorded
            session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(10))")
            session.execute("INSERT INTO t (a, b) VALUES (?, ?)", (1, "pristine"))
        finally:
            session.close()
        engine.keep_as_pristine()
        engine.restore()
        session = engine.connect()
        try:
            assert session.fetchone("SELECT b FROM t WHERE a = ?", (1,)) == ("pristine",)
        finally:
            session.close()
        engine.destroy()
    finally:
        engine.stop()
    other = MariaDBEngine(server_workdir, "external", {}, {"dsn": dsn})
    other.start()
    assert other.effective_settings["innodb_lock_wait_timeout"] == "50"  # put back


def test_numbers_are_set_and_put_back_as_numbers_whichever_way_they_are_written(dsn: str,
                                                                                server_workdir: Path) -> None:
    """SET GLOBAL refuses a quoted number for a numeric variable, and a number for a text one: a DOUBLE given as
    1e-3 or +.5E2, and the 1e-05 that Python writes for the value put back, go unquoted; a text's digits quoted."""
    admin = connect(dsn_arguments(dsn))
    try:
        admin.query(b"SET GLOBAL long_query_time = 0.00001")  # the driver reads it back as the float 1e-05
        engine = MariaDBEngine(server_workdir, "external", {"long_query_time": "1e-3", "innodb_max_dirty_pages_pct":
                                                            "+.5E2", "init_slave": "1"},
                               {"dsn": dsn, "allow_changes": "yes"})
        engine.start()
        try:
            assert _globals(admin, "long_query_time", "innodb_max_dirty_pages_pct", "init_slave") == (0.001, 50.0, "1")
        finally:
            engine.stop()
        assert _globals(admin, "long_query_time", "innodb_max_dirty_pages_pct", "init_slave") == (0.00001, 90.0, "")
    finally:
        admin.query(b"SET GLOBAL long_query_time = DEFAULT")
        admin.close()


def _globals(connection, *names: str) -> tuple:
    connection.query(("SELECT " + ", ".join(f"@@GLOBAL.{name}" for name in names)).encode())
    return tuple(value.decode() if isinstance(value, bytes) else value
                 for value in connection.store_result().fetch_row(0)[0])


def test_data_file_waits_are_read_by_operation_group_and_buffer_hits_are_counted(dsn: str) -> None:
    """performance_schema groups a file's operations as reads, writes and the rest (MISC: syncs, but also opens,
    closes, stats, ...): the third is named for what it holds. Buffer hits are counted, as the misses are."""
    warnings, samples = _sampled(dsn)
    assert {sample.labels["event"] for sample in samples if sample.name == "waits_total"} == {
        "io/innodb_data_file:read", "io/innodb_data_file:write", "io/innodb_data_file:misc"}
    assert {(sample.name, sample.unit) for sample in samples if sample.name.startswith("buffer_")} == {
        ("buffer_hits_total", "count"), ("buffer_misses_total", "count")}
    assert not [warning for warning in warnings if "performance_schema" in warning]


def test_a_user_who_may_not_read_performance_schema_keeps_the_status_counters(dsn: str) -> None:
    """Only the data-file waits need performance_schema: without them the sampler goes on, and says why."""
    admin = connect(dsn_arguments(dsn))
    try:
        admin.query(b"CREATE USER IF NOT EXISTS 'watcher'@'127.0.0.1' IDENTIFIED BY 'pw'")  # no privilege at all
    finally:
        admin.close()
    warnings, samples = _sampled(dsn.replace("//dba:pw@", "//watcher:pw@"))
    names = {sample.name for sample in samples}
    assert "waits_total" not in names and {"data_reads_total", "buffer_hits_total", "log_bytes_total"} <= names
    (denied,) = [warning for warning in warnings if "performance_schema" in warning or "without it" in warning]
    assert denied.startswith("monitoring (mariadb): performance_schema is not readable by this user (SELECT command "
                             "denied to user 'watcher'@") and "\n" not in denied


def _sampled(dsn: str) -> tuple[list[str], list[MetricSample]]:
    """What a run's monitor keeps of a MariaDB sampler connected by ``dsn``: its warnings and its samples."""
    monitor = Monitor([MariaDBSampler(lambda: connect(dsn_arguments(dsn)), "external", lambda: None)],
                      Window(0.0, 0.0))
    monitor.start(time.monotonic(), ())
    monitor.stop()
    return monitor.warnings, [sample for sample in monitor.samples if sample.source == "mariadb"]


@pytest.mark.parametrize(("knobs", "error"), [
    ({"innodb_log_buffer_size": "8M"}, "innodb_log_buffer_size changes only when your server restarts"),
    ({"innodb_page_size": "8192"}, "innodb_page_size is fixed by your server"),
])
def test_what_needs_a_restart_or_a_new_server_is_refused(dsn: str, server_workdir: Path, knobs: dict,
                                                         error: str) -> None:
    with pytest.raises(UserError, match=error):
        MariaDBEngine(server_workdir, "external", knobs, {"dsn": dsn, "allow_changes": "yes"}).start()


@pytest.mark.parametrize("dsn", ["postgresql://x@127.0.0.1/db", "mysql://root@127.0.0.1:port/db", "mysql:///db"])
def test_a_bad_dsn_is_one_line(dsn: str) -> None:
    with pytest.raises(UserError, match="bad MariaDB --dsn"):
        dsn_arguments(dsn)


def test_a_bad_dsn_never_shows_its_password_and_localhost_is_not_the_default_socket() -> None:
    with pytest.raises(UserError) as refused:
        dsn_arguments("mysql://root:s3cret@127.0.0.1:port/db")
    assert "s3cret" not in str(refused.value) and ":***@" in str(refused.value)
    assert dsn_arguments("mysql://u:p@localhost:3307/db")["host"] == "127.0.0.1"  # the port is honoured


def test_a_relative_work_directory_gives_the_server_absolute_paths(tmp_path: Path, monkeypatch) -> None:
    """mariadbd reads a relative datadir or pid-file against its basedir (/usr), not the current directory."""
    monkeypatch.chdir(tmp_path)
    engine = MariaDBEngine(Path("maximus-work"), "tpcc-1wh", {})
    assert engine.server.server_dir.is_absolute()
    assert engine.server.server_dir.is_relative_to(tmp_path / "maximus-work")
