"""The cause Maximus gives for a managed PostgreSQL server comes from what this start of the server wrote, and
a knob value that postgresql.conf cannot hold is refused before anything runs."""

from __future__ import annotations

from pathlib import Path


def test_a_server_that_will_not_start_is_explained_by_this_start_alone(harness, postgres_build: Path) -> None:
    log = next(postgres_build.glob("postgres-*/server.log"))
    with open(log, "a") as file:  # what an earlier run's server left in the log it shares
        file.write("2026-01-01 00:00:00.000 UTC [4242] FATAL:  could not map anonymous shared memory: Cannot "
                   "allocate memory\n")
    result = harness.run("run", "-e", "postgres", "-k", "max_connections=3", "--workdir", str(postgres_build),
                         "--results", str(harness.results))
    assert result.returncode == 3, result.stderr
    line = harness.one_error(result.stderr)
    assert line.startswith("error: PostgreSQL would not start: superuser_reserved_connections (3) must be less than "
                           "max_connections (3)"), line
    harness.assert_nothing_left(postgres_build)


def test_a_knob_value_with_a_newline_is_refused_before_anything_runs(harness, tmp_path: Path) -> None:
    result = harness.run("run", "-e", "postgres", "-k", "work_mem=4MB\nshared_buffers=1GB", "--workdir",
                         str(tmp_path / "work"), "--results", str(harness.results))
    assert result.returncode == 2, result.stderr
    line = harness.one_error(result.stderr)
    assert "bad value '4MB\\nshared_buffers=1GB' for knob work_mem" in line and "newline" in line, line
    assert not (tmp_path / "work").exists() and not harness.runs()


def test_a_backslash_in_a_knob_value_reaches_the_server_as_given(harness, postgres_build: Path) -> None:
    """postgresql.conf reads ``\\b`` in a quoted value as a backspace: the value is written escaped."""
    result = harness.run("run", "-e", "postgres", "-k", "application_name=a\\b", "--warmup", "0", "--duration", "1",
                         "--no-check", "--workdir", str(postgres_build), "--results", str(harness.results))
    assert result.returncode == 0, result.stderr
    [run] = harness.runs()
    assert run.engine_settings["application_name"] == "a\\b"
    harness.assert_nothing_left(postgres_build)
