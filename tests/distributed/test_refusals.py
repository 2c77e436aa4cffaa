"""What a run from several client hosts refuses, each in one line with exit code 2 before anything runs: Ray not
installed, an embedded engine, fewer warehouses or terminals than hosts, --hosts without --ray, a head that does not
answer (the real `maximus` process); and what a load from several hosts refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Ray as absent as it is from an installation without the extra: ``import ray`` raises ImportError
WITHOUT_RAY = "import sys; sys.modules['ray'] = None; from maximus.cli import main; sys.argv[0] = 'maximus'; main()"
NOTHING_THERE = "127.0.0.1:1"  # a port nothing listens on


def _refused(arguments: list[str], tmp_path: Path, python: list[str], command: tuple[str, ...] = ("run",)) -> str:
    """The one line of a refused ``maximus run`` (or other ``command``), which wrote nothing."""
    where = ["--workdir", str(tmp_path / "work"), *(["--results", str(tmp_path / "r.db")] if command != ("load",)
                                                   else [])]
    done = subprocess.run([sys.executable, *python, *command, *arguments, *where], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stdout + done.stderr, done.stderr
    assert not (tmp_path / "work").exists() and not (tmp_path / "r.db").exists()
    return lines[0]


def test_without_ray_installed_the_line_names_the_extra(tmp_path: Path) -> None:
    line = _refused(["-e", "postgres", "-w", "2", "-t", "4", "--ray", NOTHING_THERE, "--hosts", "2"], tmp_path,
                    ["-c", WITHOUT_RAY])
    assert line == "error: --ray needs Ray, an extra of Maximus: pip install 'maximus[ray]'"


def test_without_ray_installed_a_run_on_this_machine_runs_as_ever(tmp_path: Path) -> None:
    """Ray is imported only with --ray: a run without it never notices it is missing (here: its help)."""
    done = subprocess.run([sys.executable, "-c", WITHOUT_RAY, "run", "--help"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--ray" in done.stdout


@pytest.mark.parametrize(("arguments", "expected"), [
    (["--ray", NOTHING_THERE, "--hosts", "2"],
     "error: --ray: sqlite is embedded in Maximus's client processes, so its runs have one client host: run it "
     "without --ray"),
    (["-e", "postgres", "-w", "1", "-t", "4", "--ray", NOTHING_THERE, "--hosts", "2"],
     "error: --hosts 2 needs at least 2 warehouses: each host's terminals have warehouses of their own, and a "
     "terminal keeps its home: got 1"),
    (["-e", "postgres", "-w", "3", "-t", "2", "--ray", NOTHING_THERE, "--hosts", "3"],
     "error: --hosts 3 needs at least 3 terminals, one for each host: got 2"),
    (["-e", "postgres", "-w", "2", "-k", "client.nice=5", "--allow-system-changes", "--ray", NOTHING_THERE,
      "--hosts", "2"],
     "error: --ray: client.nice would set this machine's terminals, and with --ray the terminals run on the hosts: "
     "leave it out"),
    (["-e", "postgres", "-w", "2", "--hosts", "2"],
     "error: --hosts needs --ray ADDRESS: the client hosts are the nodes of a Ray cluster"),
    (["-e", "postgres", "--ray", NOTHING_THERE, "--hosts", "0"], "error: --hosts must be at least 1"),
    (["-e", "mariadb", "-w", "2", "--ray", NOTHING_THERE, "--hosts", "2"],
     f"error: --ray {NOTHING_THERE}: no Ray cluster answers there (Connection refused); start its head with "
     "`ray start --head` and give the address it prints"),
])
def test_a_run_from_hosts_that_cannot_be_is_refused_in_one_line(arguments: list[str], expected: str,
                                                                tmp_path: Path) -> None:
    assert _refused(arguments, tmp_path, ["-m", "maximus"]).startswith(expected)


@pytest.mark.parametrize(("arguments", "expected"), [
    (["--ray", NOTHING_THERE, "--hosts", "2"], "error: --ray: sqlite is embedded in Maximus's client processes"),
    (["-e", "postgres", "-w", "1", "--ray", NOTHING_THERE, "--hosts", "2"],
     "error: --hosts 2 needs at least 2 warehouses"),
])
def test_a_load_from_hosts_that_cannot_be_is_refused_in_one_line(arguments: list[str], expected: str,
                                                                 tmp_path: Path) -> None:
    """As a run's (the same checks), but a load needs a home of its own for each host, not a terminal."""
    assert _refused(arguments, tmp_path, ["-m", "maximus"], ("load",)).startswith(expected)


HOSTED = 'name = "hosts"\nengine = "{engine}"\nclients = [{clients}]\nhosts = 2\n[workload]\nwarehouses = 2\n'


@pytest.mark.parametrize(("text", "arguments", "expected"), [
    (HOSTED.format(engine="postgres", clients=4), [],
     "error: the experiment's hosts = 2 runs each run's terminals from the nodes of a Ray cluster: give its address, "
     "--ray ADDRESS"),
    (HOSTED.format(engine="postgres", clients="4, 1"), ["--ray", NOTHING_THERE],
     "hosts: at 1 clients: --hosts 2 needs at least 2 terminals, one for each host: got 1"),
    (HOSTED.format(engine="sqlite", clients=4), ["--ray", NOTHING_THERE],
     "error: --ray: sqlite is embedded in Maximus's client processes, so its runs have one client host"),
    (HOSTED.format(engine="postgres", clients=4), ["--ray", NOTHING_THERE],
     f"error: --ray {NOTHING_THERE}: no Ray cluster answers there (Connection refused)"),
])
def test_an_experiment_from_hosts_that_cannot_be_is_refused_before_anything_is_stored(
        text: str, arguments: list[str], expected: str, tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    line = _refused([str(path), *arguments], tmp_path, ["-m", "maximus"], ("experiment", "run"))
    assert line.startswith(expected) or expected in line, line
