"""A disk that fills during a build, the copy of its pristine twin or a restore ends in one line and exit code 3,
with the half-written database and copy removed: nothing of it is left filling the file system."""

from __future__ import annotations

from pathlib import Path

from maximus import api

ONE_WAREHOUSE = api.Build.of("tpcc", {"warehouses": 1})

DATABASE_MB = 90  # a 1-warehouse SQLite build, about 86 MB


def _databases(workdir: Path) -> list[str]:
    """The database directories of a managed cluster: initdb's three, and Maximus's."""
    return sorted(path.name for path in workdir.glob("postgres-*/data/base/*") if path.name.isdigit())


def test_a_sqlite_build_that_fills_the_disk_leaves_nothing(harness, small_disks) -> None:
    with small_disks.mount(DATABASE_MB // 2) as disk:
        result = harness.run("load", "--workdir", str(disk / "work"))
        assert result.returncode == 3, result.stderr
        line = harness.one_error(result.stderr)
        assert line.startswith(f"error: the build of tpcc-1wh failed: the disk holding {disk / 'work'} is full"), line
        assert not list((disk / "work").glob("*"))  # empty, or removed with the lock that made it
        assert small_disks.used_mb(disk) < 1


def test_a_pristine_copy_that_fills_the_disk_leaves_nothing(harness, small_disks) -> None:
    """The build fits, its pristine copy does not: a run that needs both builds nothing and stores no run."""
    with small_disks.mount(DATABASE_MB + 20) as disk:
        result = harness.run("run", "--workdir", str(disk / "work"), "--results", str(harness.results))
        assert result.returncode == 3, result.stderr
        line = harness.one_error(result.stderr)
        assert f"the disk holding {disk / 'work'} is full" in line and "No space left on device" in line, line
        assert not list((disk / "work").glob("*"))  # neither the database nor the half of its copy
        assert small_disks.used_mb(disk) < 1
        assert not harness.runs()


def test_a_postgres_build_that_fills_the_disk_leaves_nothing(harness, small_disks) -> None:
    with small_disks.mount(150) as disk:  # the cluster takes about 40 MB, a 1-warehouse build 120 MB more
        result = harness.run("load", "-e", "postgres", "--workdir", str(disk))
        assert result.returncode == 3, result.stderr
        line = harness.one_error(result.stderr)
        assert line.startswith("error: the build of tpcc-1wh failed: the disk holding ") and " is full (DiskFull: " \
            in line, line
        harness.assert_nothing_left(disk)
        assert len(_databases(disk)) == 3  # the half-loaded database is dropped
        # what stays is the cluster and the WAL it keeps for reuse (min_wal_size, 80 MB), not the build
        assert small_disks.used_mb(disk) < 110


def test_a_postgres_restore_that_fills_the_disk_keeps_the_pristine_copy_alone(harness, small_disks) -> None:
    with small_disks.mount(1024) as disk:
        engine = api.make_engine("postgres", disk, ONE_WAREHOUSE, {})
        with api.running(engine):
            api.load_database(engine, ONE_WAREHOUSE, seed=1)  # the pristine copy alone, as a build leaves it
        small_disks.resize(disk, int(small_disks.used_mb(disk)) + 40)  # less than the working copy needs
        result = harness.run("run", "-e", "postgres", "--workdir", str(disk), "--results", str(harness.results))
        assert result.returncode == 3, result.stderr
        line = harness.one_error(result.stderr)
        assert line.startswith("error: restoring the pristine copy of tpcc-1wh failed: the disk holding ") and \
            " is full (DiskFull: " in line, line
        harness.assert_nothing_left(disk)
        assert len(_databases(disk)) == 4  # the pristine copy, for the next run; no half of the working one
