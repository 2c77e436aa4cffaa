"""Process knobs, as root: the client's on Maximus's own process for a run and put back after it, the server's on a
managed PostgreSQL server's processes, inherited by the backends it forks for the terminals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from maximus import api, system
from maximus.errors import UserError
from maximus.records import RunStatus

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or (os.cpu_count() or 1) < 2,
                                reason="process knobs are changed as root (CI is root), on 2 CPUs or more")
ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})


def _maximus(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "maximus", *args], capture_output=True, text=True, timeout=240)


def test_client_knobs_hold_for_the_run_are_recorded_and_put_back(workdir: Path, tmp_path: Path) -> None:
    before = system.scheduling(os.getpid())
    options = api.BenchmarkOptions(engine="sqlite", knobs={"client.cpus": "0", "client.nice": "3"}, terminals=2,
                                   warmup_s=0.5, duration_s=1.5, workdir=workdir, results=tmp_path / "results.db",
                                   system_changes=True)
    outcome = api.run_benchmark(options)
    assert outcome.status is RunStatus.COMPLETE
    assert system.scheduling(os.getpid()) == before
    store = api.open_results(tmp_path / "results.db")
    try:
        record = store.run(outcome.run_id)
    finally:
        store.close()
    assert record.environment["processes"]["client"] == {"nice": "3", "cpus": "0"}
    assert record.spec.knobs["client.cpus"] == "0" and "server" not in record.environment["processes"]


def test_server_knobs_reach_every_backend_the_server_forks(server_workdir: Path) -> None:
    engine = api.make_engine("postgres", server_workdir, ONE_WAREHOUSE, {})
    chosen = {"server.nice": "5", "server.cpus": "1", "server.ionice": "idle"}
    with api.running(engine):
        system.apply_to_server(chosen, engine.server_pid())
        engine.provision()
        session = engine.connect()  # a backend forked after the knobs were set
        try:
            (backend,) = session.fetchone("SELECT pg_backend_pid()")
            for pid in (engine.server_pid(), backend):
                assert system.scheduling(pid) == {"nice": "5", "cpus": "1"}
                assert system.io_class(pid) == "idle"
        finally:
            session.close()


def test_a_postgres_run_records_its_servers_scheduling(server_workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    ran = _maximus("run", "-e", "postgres", "-k", "server.nice=2", "-k", "server.cpus=1", "-k", "client.cpus=0",
                   "--allow-system-changes", "--warmup", "0.5", "--duration", "1.5", "--workdir", str(server_workdir),
                   "--results", str(results))
    assert ran.returncode == 0, ran.stderr
    store = api.open_results(results)
    try:
        (record,) = store.runs()
    finally:
        store.close()
    assert record.environment["processes"] == {"client": {"nice": "0", "cpus": "0"},
                                               "server": {"nice": "2", "cpus": "1"}}
    everywhere = system.scheduling(os.getpid())["cpus"]
    client_only = _maximus("run", "-e", "postgres", "-k", "client.cpus=0", "--allow-system-changes", "--warmup", "0.5",
                           "--duration", "1.5", "--workdir", str(server_workdir), "--results", str(results))
    assert client_only.returncode == 0, client_only.stderr
    store = api.open_results(results)
    try:
        record = store.runs()[-1]
    finally:
        store.close()
    assert record.environment["processes"]["server"]["cpus"] == everywhere != "0"  # not the client's


def test_server_knobs_without_a_server_and_bad_cpus_are_one_line(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "results.db"
    sqlite = _maximus("run", "-k", "server.nice=-5", "--allow-system-changes", "--workdir", str(workdir),
                      "--results", str(results))
    assert sqlite.returncode == 2
    assert sqlite.stderr == ("error: server.nice: sqlite runs no server process of Maximus's here (an embedded "
                             "engine, or a server of yours): use the client.* knobs\n")
    with pytest.raises(UserError, match=r"^bad value '64' for knob client.cpus: expected a CPU list such as 1, 0-1 "
                                        r"or 0,2-3 of this machine's CPUs 0-\d+$"):
        api.BenchmarkOptions(knobs={"client.cpus": "64"}, system_changes=True).validate()
    assert not results.exists()
