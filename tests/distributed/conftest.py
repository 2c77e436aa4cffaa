"""What the tests of several client hosts share: a Ray cluster of three nodes on this machine (Ray's own test cluster,
``ray.cluster_utils.Cluster``: about 10 s to start here, against 15 s for ``ray start`` processes), and a
two-warehouse TPC-C build on a managed PostgreSQL server. Every process of the cluster is stopped at the end, and the
fixture fails if one outlives it."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from maximus import api
from maximus.engines import _process

TWO_WAREHOUSES = api.Build.of("tpcc", {"warehouses": 2})
# The least object store Ray takes: the hosts stream their samples through it, under a MB a take
OBJECT_STORE_BYTES = 80 << 20
STOPPED_WITHIN_S = 15.0


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """The address of a Ray cluster whose head has no CPU, as a database's machine that takes no client host, and
    whose two other nodes have one CPU each: two client hosts, sharing this machine's cores."""
    import ray
    from ray.cluster_utils import Cluster

    temp = Path(tempfile.mkdtemp(prefix="maximus-ray-", dir="/tmp"))  # short: Ray's socket paths must stay short
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_TMPDIR", str(temp))  # its sessions' logs and the cluster's address, else in /tmp/ray
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                                "object_store_memory": OBJECT_STORE_BYTES})
        try:
            for _ in range(2):
                cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
            yield cluster.address
        finally:
            started = _ray_processes()
            ray.shutdown()  # a test that failed halfway may have left this process connected
            cluster.shutdown()
            left = _outliving(started)
            shutil.rmtree(temp, ignore_errors=True)
            assert not left, f"Ray processes left running: {left}"


def _ray_processes() -> dict[int, str]:
    """This process's descendants that are Ray's: its nodes' servers, agents and workers. Not this process's own
    multiprocessing helpers (the fork server of the runs it drove itself, its resource tracker), whose command line
    names Ray's directories only because Ray put them on ``sys.path``."""
    found = {}
    for pid in _process.descendants(os.getpid()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            own = _process._parent(pid) == os.getpid() and "from multiprocessing." in command
        except OSError:  # it has just ended
            continue
        if not own and (command.startswith("ray::") or "/site-packages/ray/" in command):
            found[pid] = command[:120]
    return found


def _outliving(processes: dict[int, str]) -> dict[int, str]:
    """Those of ``processes`` still there ``STOPPED_WITHIN_S`` after the cluster's shutdown."""
    deadline = time.monotonic() + STOPPED_WITHIN_S
    while (left := {pid: text for pid, text in processes.items() if _alive(pid)}) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has ended; its parent (this process, or init) reaps it


@pytest.fixture(scope="module")
def two_warehouses(server_workdir: Path) -> Path:
    """A pristine 2-warehouse PostgreSQL build (seed 1) in the managed cluster of ``server_workdir``."""
    engine = api.make_engine("postgres", server_workdir, TWO_WAREHOUSES, {})
    with api.running(engine):
        api.load_database(engine, TWO_WAREHOUSES, seed=1)
    return server_workdir
