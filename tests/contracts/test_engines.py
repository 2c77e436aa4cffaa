"""The Engine contract, checked for every registered engine and for a minimal second one (``mini_engine``), which
then runs through ``maximus run`` end to end (one suite, parametrised by the registry; nothing keyed by name).

PostgreSQL runs as a managed server started by the tests (initdb once, then a server per test).
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Callable, Iterator

import pytest
from packaging.requirements import Requirement
from mini_engine import MiniEngine
from typer.testing import CliRunner

from maximus import api
from maximus.api import running
from maximus.cli.app import app
from maximus.engines import ENGINES, Driver, Engine, _process
from maximus.engines.server import ServerEngine
from maximus.errors import EngineError, UserError, describe
from maximus.records import ENGINE_CHECK, ENGINE_CLAUSE, Outcome, RunStatus

# the registered ones, and the minimal one as a registry line would add it
CANDIDATES = {**ENGINES, MiniEngine.name: MiniEngine}
# the engines on the shared server layer (engines/server/)
SERVER_ENGINES = {name: engine for name, engine in CANDIDATES.items() if issubclass(engine, ServerEngine)}


@pytest.fixture(params=sorted(CANDIDATES), ids=str)
def engine_class(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type[Engine]:
    monkeypatch.setitem(ENGINES, request.param, CANDIDATES[request.param])
    return CANDIDATES[request.param]


@pytest.fixture
def started(engine_class: type[Engine], server_workdir: Path, tmp_path: Path) -> Iterator[Callable[..., Engine]]:
    """A factory of running engines, stopped at the end of the test."""
    engines: list[Engine] = []
    workdir = server_workdir if engine_class.capabilities.server_process else tmp_path

    def make(settings: dict | None = None, database: str = "contract") -> Engine:
        engine = engine_class(workdir, database, settings or {})
        engine.start()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.stop()


def test_a_driver_is_an_extra_that_installs_it(engine_class: type[Engine]) -> None:
    """An engine's driver is one of Maximus's extras, never a core dependency, and it is installed here (the suite
    installs every extra): ``require_driver`` lets the engine run."""
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    driver = engine_class.driver
    if driver is None:
        return  # it comes with Python (sqlite3)
    extra = project["optional-dependencies"][driver.extra]
    assert extra and driver.extra in project["optional-dependencies"]["all"][0]
    named = {Requirement(requirement).name for requirement in extra}
    assert not named & {Requirement(requirement).name for requirement in project["dependencies"]}
    assert driver.missing(engine_class.name) is None
    engine_class.require_driver()


def test_a_missing_or_broken_driver_is_one_line_naming_the_extra(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    absent = Driver("maximus_test_absent_driver", "absent", ("libabsent-dev", "pkg-config"))
    assert absent.missing("x") == ("the x engine needs its driver: pip install 'maximus[absent]' (it compiles "
                                   "against libabsent-dev; apt-get install libabsent-dev pkg-config)")
    (tmp_path / "maximus_test_broken_driver.py").write_text("raise ImportError('libbroken.so.3: no such file')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = Driver("maximus_test_broken_driver", "broken")
    assert broken.missing("y") == ("the y engine cannot load its driver (libbroken.so.3: no such file): "
                                   "pip install 'maximus[broken]'")
    monkeypatch.setattr(MiniEngine, "driver", absent)
    with pytest.raises(UserError, match=r"^the mini engine needs its driver: pip install 'maximus\[absent\]'"):
        MiniEngine.require_driver()


def test_every_knob_default_parses_and_is_described(engine_class: type[Engine]) -> None:
    catalogue = engine_class.catalogue({})
    assert set(engine_class.documented_knobs()) <= {knob.name for knob in catalogue}
    assert len(list(catalogue)) >= len(engine_class.documented_knobs()) >= 2
    for knob in catalogue:
        assert knob.description and knob.applies, knob.name
    for name in engine_class.documented_knobs():
        knob = catalogue.get(name)
        assert knob.parse(knob.default) == knob.default or knob.default == ""


def test_unknown_knob_suggests_the_closest_name(engine_class: type[Engine], tmp_path: Path) -> None:
    name = engine_class.documented_knobs()[0]
    with pytest.raises(UserError, match=f"did you mean {name}"):
        engine_class(tmp_path, "db", {name[:-1] + "x": "1"})


def test_knob_names_are_taken_in_any_case_and_kept_in_the_engines_spelling(engine_class: type[Engine],
                                                                            tmp_path: Path) -> None:
    knob = next(k for k in engine_class.catalogue({}) if k.name != "bin_dir")
    assert engine_class(tmp_path, "db", {knob.name.upper(): knob.default}).settings == {knob.name: knob.default}


def _load_one_row(engine: Engine, value: str) -> None:
    engine.provision()
    session = engine.connect()
    session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b VARCHAR(10))")
    session.begin()
    session.execute("INSERT INTO t (a, b) VALUES (?, ?)", (1, value))
    session.commit()
    session.close()


def test_provision_connect_snapshot_restore(started: Callable[..., Engine]) -> None:
    engine = started()
    _load_one_row(engine, "pristine")
    engine.snapshot()
    assert engine.has_snapshot()
    session = engine.connect()
    session.begin()
    assert session.execute("UPDATE t SET b = ? WHERE a = ?", ("changed", 1)) == 1
    session.commit()
    session.close()
    engine.restore()
    session = engine.connect()
    assert session.fetchone("SELECT b FROM t WHERE a = ?", (1,)) == ("pristine",)
    session.close()
    engine.destroy()
    assert not engine.exists()


def test_the_engine_says_how_it_reads_its_pages_and_how_large_its_database_is(started: Callable[..., Engine]) -> None:
    """What fio's job beside a storage-bound run is made from (``maximus.device``)."""
    engine = started()
    _load_one_row(engine, "sized")
    access = engine.storage_access()
    assert access.page_bytes in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
    session = engine.connect()
    try:
        assert engine.database_bytes(session) >= access.page_bytes
    finally:
        session.close()


def test_a_database_kept_as_pristine_comes_back_with_every_restore(started: Callable[..., Engine]) -> None:
    engine = started()
    _load_one_row(engine, "older")
    engine.keep_as_pristine()
    _load_one_row(engine, "pristine")
    engine.keep_as_pristine()  # replaces the older pristine copy
    assert engine.has_snapshot()
    for _ in range(2):
        engine.restore()
        session = engine.connect()
        session.begin()
        assert session.fetchone("SELECT b FROM t WHERE a = ?", (1,)) == ("pristine",)
        assert session.execute("UPDATE t SET b = ? WHERE a = ?", ("changed", 1)) == 1
        session.commit()
        session.close()
    engine.destroy()
    assert not engine.exists()


def test_the_engines_own_integrity_check_passes_on_a_sound_database(started: Callable[..., Engine]) -> None:
    engine = started()
    engine.provision()
    session = engine.connect()
    try:
        session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER)")
        session.execute("CREATE INDEX t_b ON t (b)")
        for a in range(1, 101):
            session.execute("INSERT INTO t (a, b) VALUES (?, ?)", (a, a % 7))
        (checked,) = engine.integrity_check(session)
    finally:
        session.close()
    assert (checked.condition, checked.clause, checked.passed, checked.detail) == (ENGINE_CHECK, ENGINE_CLAUSE, True,
                                                                                   "")
    assert checked.description


def test_rollback_discards_and_errors_are_classified(started: Callable[..., Engine]) -> None:
    engine = started()
    engine.provision()
    session = engine.connect()
    session.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)")
    session.begin()
    session.execute("INSERT INTO t (a) VALUES (?)", (1,))
    session.rollback()
    assert session.fetchall("SELECT a FROM t") == []
    with pytest.raises(engine.driver_error(), match="no_such_table") as caught:
        session.execute("SELECT * FROM no_such_table")
    assert engine.classify(caught.value) is Outcome.FAILED
    session.close()


def test_a_lock_conflict_is_classified_as_retry(started: Callable[..., Engine], engine_class: type[Engine]) -> None:
    assert engine_class.lock_wait_knob, "an engine names the knob that bounds a lock wait"
    engine = started({engine_class.lock_wait_knob: engine_class.short_lock_wait})
    engine.provision()
    holder, waiter = engine.connect(), engine.connect()
    holder.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER)")
    holder.execute("INSERT INTO t (a, b) VALUES (1, 0)")
    holder.begin()
    holder.execute("UPDATE t SET b = b + 1 WHERE a = 1")
    with pytest.raises(engine.driver_error(), match="(?i)lock") as caught:  # "database is locked", "lock timeout"
        waiter.begin()  # SQLite's writer waits here, PostgreSQL's at the UPDATE
        waiter.execute("UPDATE t SET b = b + 1 WHERE a = 1")
    assert engine.classify(caught.value) is Outcome.RETRY
    waiter.rollback()
    holder.rollback()
    holder.close()
    waiter.close()


def test_knobs_take_effect_as_the_engine_reports_them(started: Callable[..., Engine],
                                                       engine_class: type[Engine]) -> None:
    assert engine_class.example_knob, "an engine names a knob whose effect it reports"
    name, value, reported = engine_class.example_knob
    assert value != engine_class.catalogue({}).get(name).default
    engine = started({name: value})
    engine.provision()
    session = engine.connect()
    assert engine.reported_settings(session)[name] == reported
    session.close()


def test_running_stops_the_server_even_on_an_error(engine_class: type[Engine], server_workdir: Path) -> None:
    """The error goes on as it is, and a managed server is down after it: connecting is the engine's one-line
    error. An embedded engine, or a server of the user's, is not stopped."""
    engine = engine_class(server_workdir, "contract", {})
    with pytest.raises(RuntimeError, match="boom"):
        with running(engine):
            engine.provision()
            session = engine.connect()
            assert session.fetchone("SELECT 1") == (1,)  # up while running
            session.close()
            raise RuntimeError("boom")
    if engine.manages_server:
        with pytest.raises(EngineError, match="cannot connect"):
            engine.connect()


def test_a_second_engine_runs_end_to_end_under_its_own_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One registry line: ``maximus run -e mini`` builds TPC-C on it, drives it, checks it and stores the run with
    its knobs, as it does SQLite's; ``--dsn``, an option of another engine, is refused in one line."""
    monkeypatch.setitem(ENGINES, MiniEngine.name, MiniEngine)
    results, workdir = tmp_path / "results.db", tmp_path / "work"
    ran = CliRunner().invoke(app, ["run", "-e", "mini", "-k", "synchronous=normal", "--terminals", "2", "--warmup",
                                   "0.5", "--duration", "2", "--workdir", str(workdir), "--results", str(results)])
    assert ran.exit_code == 0, ran.output
    assert (workdir / "tpcc-1wh.mini-pristine").exists()
    store = api.open_results(results)
    try:
        (record,) = store.runs()
        report = api.analyse_run(store, record.id)
    finally:
        store.close()
    assert record.spec.engine == "mini" and record.status is RunStatus.COMPLETE
    assert record.spec.knobs == {"synchronous": "normal"}
    assert report.figures.headline > 0 and all(check.passed is not False for check in report.consistency)
    other = CliRunner().invoke(app, ["run", "-e", "mini", "--dsn", "host=127.0.0.1", "--workdir", str(workdir),
                                     "--results", str(results)])
    assert str(other.exception) == "--dsn is not an option of mini: add -e postgres"


# -- the shared server layer, for every engine on it ------------------------------------------------------------------

@pytest.fixture(params=sorted(SERVER_ENGINES), ids=str)
def server_engine_class(request: pytest.FixtureRequest) -> type[ServerEngine]:
    return SERVER_ENGINES[request.param]


@pytest.fixture
def own_server_workdir() -> Iterator[Path]:
    """A work directory of the test's own, for a server it kills: the other tests' server is left alone."""
    path = Path(tempfile.mkdtemp(prefix="maximus-test-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_server_engines_are_the_registered_engines_with_a_server() -> None:
    assert set(SERVER_ENGINES) == {name for name, engine in ENGINES.items() if engine.capabilities.server_process}
    assert set(SERVER_ENGINES) >= {"postgres", "mariadb"}


def _lost_under(session: object, driver_error: type[Exception]) -> Exception:
    """The error of the first statement that finds the session's server gone (a killed server's sessions may answer
    once more before they notice)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            session.fetchone("SELECT 1")  # type: ignore[attr-defined]
        except driver_error as error:
            return error
        time.sleep(0.05)
    raise AssertionError("the session still answers 10 s after its server was killed")


def test_a_server_killed_under_a_session_is_a_fault_in_one_line(server_engine_class: type[ServerEngine],
                                                               own_server_workdir: Path,
                                                               kill_server: Callable[[int], None]) -> None:
    """What makes a run failed rather than measured: the watch probe and the session's error both name the cause."""
    engine = server_engine_class(own_server_workdir, "killed", {})
    engine.start()
    try:
        engine.provision()
        watch = engine.watch()
        session = engine.connect()
        assert watch() is None
        pid = engine.server_pid()
        kill_server(pid)
        _gone(pid)  # its sessions can see it die a moment before /proc does: the kill is done, not on its way
        error = _lost_under(session, engine.driver_error())
        assert isinstance(error, importlib.import_module(engine.driver.module).OperationalError)  # PEP 249's
        assert session.broken()
        cause = engine.fault(describe(error))
        assert cause is not None and cause.startswith(f"the {engine.server.title} server stopped during the run: ")
        assert "\n" not in cause and watch() == cause
        session.close()
    finally:
        engine.stop()
    assert engine.server_pid() is None


def test_a_crash_kills_every_server_process_and_the_server_recovers(server_engine_class: type[ServerEngine],
                                                                     own_server_workdir: Path) -> None:
    """A crash test's crash: the main process and every process under it gone at once, with the shared memory they
    had mapped (a server never started again would leave it on the machine), a committed row kept (the page cache
    outlives them), and the next start recovers; a crash with no server running is one line."""
    engine = server_engine_class(own_server_workdir, "crashed", {})
    engine.start()
    try:
        _load_one_row(engine, "kept")
        pid = engine.server_pid()
        assert pid is not None
        family = [pid, *_process.descendants(pid)]
        files, segments = _process.shared_memory(family)
        engine.crash()
        assert not [member for member in family if _process.alive(member)]
        assert not _process.shared_memory_files(files)
        assert not segments & _system_v_segments()
        engine.start()
        session = engine.connect()
        assert session.fetchone("SELECT b FROM t") == ("kept",)
        session.close()
    finally:
        engine.stop()
    with pytest.raises(EngineError, match=r"is not running: nothing to crash$"):
        engine.crash()
    assert isinstance(engine.loss_window("power"), str)


def _system_v_segments() -> set[int]:
    """The ids of the machine's System V shared memory segments."""
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {int(line.split()[1]) for line in lines}


def _gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _process.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _process.alive(pid), f"process {pid} still runs {timeout} s after SIGKILL"


# Each an error of a session on a running server, and the start of the cause the engine gives it (None: the
# transaction's own error, which only the failure threshold counts).
FAULTS = {
    "a full disk": (lambda errors: f"OperationalError: (28, 'write: {errors.full[0]}')\nDETAIL: the second line",
                    lambda engine: f"the disk holding {engine.data_path()} is full (OperationalError: (28, "),
    "a corrupt file": (lambda errors: f"OperationalError: {errors.corrupt[0]}\nCONTEXT: a page of t",
                       lambda engine: f"the {engine.server.title} database {engine.database} is corrupt "
                                      "(OperationalError: "),
    "a lost connection": (lambda errors: f"OperationalError: {errors.lost[0]}\nwhile reading",
                          lambda engine: f"the connection to the {engine.server.title} server was lost during the "
                                         "run (OperationalError: "),
    "a duplicate key": (lambda errors: "IntegrityError: duplicate key value (1062, 2013) violates 'PRIMARY'",
                        lambda engine: None),
}


def test_the_fault_ladder_names_the_cause_in_one_line(server_engine_class: type[ServerEngine],
                                                      server_workdir: Path) -> None:
    """A lost connection to a server that still runs (and has not recovered from a crash) is the connection's fault."""
    engine = server_engine_class(server_workdir, "contract", {})
    with running(engine):
        for case, (error, expected) in FAULTS.items():
            cause, wanted = engine.fault(error(engine.server.errors)), expected(engine)
            assert cause is None if wanted is None else cause.startswith(wanted) and "\n" not in cause, (case, cause)


def test_a_restarted_server_is_judged_by_what_its_own_start_logged(started: Callable[..., Engine],
                                                                   engine_class: type[Engine]) -> None:
    """The log accumulates over starts: the stop before this start (PostgreSQL's "shutdown request") is no fault."""
    if not issubclass(engine_class, ServerEngine):
        return
    engine = started()
    engine.stop()
    engine.start()
    assert engine.server.stopped() is None and engine.watch()() is None
    assert engine.fault("OperationalError: " + engine.server.errors.lost[0]).startswith("the connection to the ")
