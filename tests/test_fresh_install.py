"""A new user's machine: Maximus built as `python -m build` makes it (the sdist, then the wheel from the sdist,
without a C compiler) and installed with its core dependencies only, from wheels only, into a new virtual
environment. There the demo runs and writes its report, and an engine whose driver is an extra not installed ends
in one line that names the extra. The core's wheels come from pip's cache (``make test`` passes it through), so
this costs seconds once the suite's own environment was installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import maximus

from observers import Quiet  # tests/observers.py

ROOT = Path(__file__).resolve().parents[1]
DRIVERS = {"postgres": "psycopg", "mariadb": "MySQLdb"}  # each engine's, an extra of Maximus's


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built from a copy of the source tree as a clean clone has it, with no compiler:
    the C extensions are optional."""
    work = tmp_path_factory.mktemp("fresh")
    source = work / "source"
    left_out = (".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.so", "maximus-work",
                "maximus-report-*.html")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*left_out))
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(work / "dist"),
                            str(source)], capture_output=True, text=True, timeout=240,
                           env={**os.environ, "CC": "false"})  # a compiler that always fails
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return work / "dist"


@pytest.fixture(scope="module")
def fresh(dist: Path) -> Path:
    """The new environment's bin directory: the wheel and the core's dependencies, none built from source."""
    venv = dist.parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    [wheel] = dist.glob("*.whl")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                                "--quiet", "--disable-pip-version-check", "--only-binary", ":all:", str(wheel)],
                               capture_output=True, text=True, timeout=240)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return venv / "bin"


def _maximus(bin_dir: Path, *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "maximus"), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env={**os.environ, "COLUMNS": "200"})


def test_the_core_installs_from_wheels_without_any_engine_driver(fresh: Path, dist: Path) -> None:
    found = subprocess.run([str(fresh / "python"), "-c", "import importlib.util as u; print(*(u.find_spec(m) is None "
                            f"for m in {list(DRIVERS.values())!r}))"], capture_output=True, text=True, timeout=60)
    assert found.stdout.split() == ["True", "True"], found.stderr  # the core only: no driver came with it
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not {Requirement(r).name for r in requires} & {"psycopg", "mysqlclient"}
    [wheel] = dist.glob("*.whl")
    assert wheel.name.startswith(f"maximus-{maximus.__version__}-")


def test_version_is_the_packages_own(fresh: Path, tmp_path: Path) -> None:
    shown = _maximus(fresh, "--version", cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (0, f"maximus {maximus.__version__}\n"), shown.stderr


def test_the_sdist_holds_every_file_of_the_package(dist: Path) -> None:
    """What `pip install` of the sdist compiles and reads: every source file, the C headers with them."""
    [sdist] = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {Path(*Path(name).parts[1:]) for name in archive.getnames()}
    package = ROOT / "src" / "maximus"
    wanted = {path.relative_to(ROOT) for path in package.rglob("*") if path.is_file()
              and "__pycache__" not in path.parts and path.suffix not in (".so", ".pyc")}
    assert wanted - members == set()
    assert {Path("pyproject.toml"), Path("setup.py"), Path("README.md")} <= members


@pytest.mark.parametrize("engine", sorted(DRIVERS))
def test_an_engine_without_its_driver_is_one_line_naming_the_extra(fresh: Path, tmp_path: Path, engine: str) -> None:
    listed = _maximus(fresh, "run", "--help", cwd=tmp_path)
    assert listed.returncode == 0 and engine in listed.stdout  # still registered and listed
    refused = _maximus(fresh, "run", "-e", engine, "--workdir", str(tmp_path / "work"), "--results",
                       str(tmp_path / "r.db"), cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""  # before anything runs: not even the estimate
    assert refused.stderr.startswith(f"error: the {engine} engine needs its driver: pip install 'maximus[{engine}]'")
    assert refused.stderr.count("\n") == 1
    (tmp_path / "e.toml").write_text(f'name = "e"\nengine = "{engine}"\n')
    experiment = _maximus(fresh, "experiment", "run", str(tmp_path / "e.toml"), "--workdir", str(tmp_path / "work"),
                          "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert experiment.returncode == 2 and experiment.stderr.count("\n") == 1, experiment.stderr
    assert f"engine: the {engine} engine needs its driver: pip install 'maximus[{engine}]'" in experiment.stderr
    assert not (tmp_path / "work").exists() and not (tmp_path / "r.db").exists()


def test_the_mariadb_extra_says_what_it_compiles_against(fresh: Path, tmp_path: Path) -> None:
    refused = _maximus(fresh, "run", "-e", "mariadb", cwd=tmp_path)
    assert refused.stderr.endswith("(it compiles against libmariadb-dev; apt-get install libmariadb-dev "
                                   "pkg-config)\n")


def test_the_demo_runs_an_experiment_and_prints_run_details_step_tables_and_its_report(fresh: Path,
                                                                                        tmp_path: Path) -> None:
    result = _maximus(fresh, "demo", "--duration", "2", "--workdir", str(tmp_path / "work"), "--results",
                      str(tmp_path / "results.db"), cwd=tmp_path, timeout=400)
    assert result.returncode == 0, result.stderr
    for expected in ("tpmC", "NOPM", "TPM", "New-Order", "Payment", "Order-Status", "Deferred-Delivery",
                     "Stock-Level", "Input validity (5.5.1.5)", "Consistency (each condition with its clause)",
                     "Load time:", "TPC-C-like",
                     "Experiment 1: demo", "Step 0: baseline", "Step 1: page size 8K (page_size 4096 → 8192)",
                     "Step 2: WAL journal (journal_mode delete → wal)", "6 of 6 runs finished", "Summary:",
                     "of 2 steps significant"):
        assert expected in result.stdout, expected
    assert "FAIL" not in result.stdout
    report = tmp_path / "maximus-report-1.html"
    assert f"Report: {report.name}" in result.stdout and report.stat().st_size > 1_000_000  # plotly inlined
    assert "<script src=" not in report.read_text()  # self-contained: nothing to fetch
    assert result.stdout.count("run 6/6") == 1
    runs = _maximus(fresh, "runs", "--results", str(tmp_path / "results.db"), cwd=tmp_path)
    assert runs.returncode == 0 and runs.stdout.count("complete") == 6


def test_starting_maximus_imports_no_engine_driver() -> None:
    """Here, in the suite's environment, the drivers are installed: the command line and the SQLite engine's
    modules must not import them (without them Maximus did not start at all)."""
    code = ("import sys\nimport maximus.cli.app, maximus.api, maximus.engines\n"
            "from maximus.engines import ENGINES\n"
            f"print(*sorted(m for m in {list(DRIVERS.values())!r} if m in sys.modules))\n"
            "import importlib.util as u\n"
            f"print(*(u.find_spec(m) is not None for m in {list(DRIVERS.values())!r}))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    imported, installed = shown.stdout.splitlines()
    assert installed.split() == ["True", "True"], shown.stderr  # else this would prove nothing
    assert imported == ""


def _fake(bin_dir: Path, name: str, script: str) -> None:
    (bin_dir / name).write_text("#!/bin/bash\n" + script)
    (bin_dir / name).chmod(0o755)


@pytest.mark.parametrize(("python", "said"), [
    ('case "$*" in *ensurepip*) exit 1;; esac\nexec "$REAL" "$@"\n',
     "{python} cannot make a virtual environment with pip in it: install python{v}-venv "
     "(apt-get install python{v}-venv)"),
    ('case "$*" in *version_info\\ \\<*) exit 1;; *print*) echo 3.9; exit;; esac\nexec "$REAL" "$@"\n',
     "Maximus needs Python 3.11 or later, and {python} is 3.9"),
])
def test_make_says_in_one_line_what_python_lacks(tmp_path: Path, python: str, said: str) -> None:
    """Debian's own Python without python3.X-venv (ensurepip), or a Python too old, as a user who is not root meets
    it (root on Debian gets the package installed)."""
    _fake(tmp_path, "python", python)
    _fake(tmp_path, "id", 'echo 1000\n')  # not root: told, not installed for
    done = subprocess.run(["bash", str(ROOT / "scripts" / "python-venv"), str(tmp_path / "python")],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "REAL": sys.executable, "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: " + said.format(v=version, python=tmp_path / "python") + "\n"


# A read verb run in the new environment with every way of starting a process refused: reading results starts
# no server, no worker, no tool.
NO_PROCESS = """
import _posixsubprocess, os, sys
def refused(*args, **kwargs):
    raise SystemExit("error: a read command started a process")
os.fork = os.posix_spawn = os.posix_spawnp = os.execv = os.execve = _posixsubprocess.fork_exec = refused
from maximus.cli import main
main()
"""
SERVER_EXPERIMENT = """\
name = "{engine} anywhere"
engine = "{engine}"
clients = [1]
repeats = 2
[workload]
warehouses = 1
warmup = 0.5
duration = 1
[baseline]
{knob} = "{value}"
"""


@pytest.fixture(scope="module")
def server_results(server_workdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results database holding a PostgreSQL experiment (1) and a MariaDB one (2), made here with the drivers."""
    from maximus.experiment import runner

    folder = tmp_path_factory.mktemp("server-results")
    for engine, knob, value in (("postgres", "work_mem", "8MB"), ("mariadb", "innodb_lock_wait_timeout", "7")):
        path = folder / f"{engine}.toml"
        path.write_text(SERVER_EXPERIMENT.format(engine=engine, knob=knob, value=value))
        runner.start(path, server_workdir, folder / "results.db", Quiet())
    return folder / "results.db"


def _read(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([str(bin_dir / "python"), "-c", NO_PROCESS, *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    return done


def test_results_of_server_engines_read_where_neither_engine_nor_its_driver_is(fresh: Path, server_results: Path,
                                                                               tmp_path: Path) -> None:
    """A results database mailed to a colleague: every read verb, in the core install, starting no process."""
    results = tmp_path / "mailed.db"
    shutil.copy(server_results, results)
    at = ("--results", str(results))
    listed = _read(fresh, "runs", *at, cwd=tmp_path).stdout
    assert listed.count(" complete ") == 4 and "postgres" in listed and "mariadb" in listed
    for run, engine in ((1, "postgres"), (3, "mariadb")):
        shown = _read(fresh, "show", str(run), *at, cwd=tmp_path).stdout
        assert "tpmC" in shown and engine in shown
    assert "B/A" in _read(fresh, "compare", "3", "4", *at, cwd=tmp_path).stdout
    for experiment, name in ((1, "postgres anywhere"), (2, "mariadb anywhere")):
        shown = _read(fresh, "experiment", "show", str(experiment), *at, cwd=tmp_path).stdout
        assert name in shown and "Step 0: baseline" in shown
        _read(fresh, "report", str(experiment), "-o", str(tmp_path / f"{experiment}.html"), *at, cwd=tmp_path)
        assert (tmp_path / f"{experiment}.html").stat().st_size > 1_000_000
        exported = json.loads(_read(fresh, "export", str(experiment), "--format", "json", *at, cwd=tmp_path).stdout)
        assert exported
