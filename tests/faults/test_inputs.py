"""Every number is checked before anything runs: finite, within its documented range, and a plan of more than a
day needs --yes; knobs beyond the engine's range are refused, and a setting the engine reports otherwise is a
warning of the run (issue 29, point 4)."""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import pytest

from maximus.records import RunStatus
from maximus.store import ResultsStore

from .inputs_helpers import (EXPERIMENT, COMPLETE, experiment_file, maximus, one_line_error, start, statuses, stop,
                             stored, wait_for)

BIG = "9223372036854775808"  # 2^63: one past SQLite's largest integer
SECONDS = r"number of seconds, at most 2,592,000 \(30 days\)"


@pytest.mark.parametrize(("args", "pattern"), [
    (["run", "-d", "nan"], rf"--duration must be a positive {SECONDS}, got nan"),
    (["run", "-d", "inf"], rf"--duration must be a positive {SECONDS}, got inf"),
    (["run", "-d", "0"], rf"--duration must be a positive {SECONDS}, got 0"),
    (["run", "--warmup", "inf"], rf"--warmup must be a non-negative {SECONDS}, got inf"),
    (["run", "--warmup", "nan"], rf"--warmup must be a non-negative {SECONDS}, got nan"),
    (["run", "-w", "99999999999"], r"--warehouses must be at least 1 and at most 10,000, got 99999999999"),
    (["load", "-w", "99999999999"], r"--warehouses must be at least 1 and at most 10,000, got 99999999999"),
    (["run", "-t", "0"], r"--terminals must be at least 1 and at most 10,000, got 0"),
    (["run", "-t", "10001"], r"--terminals must be at least 1 and at most 10,000, got 10001"),
    (["run", "--seed", BIG], rf"--seed must be at least 0 and at most 9,223,372,036,854,775,807, got {BIG}"),
    (["load", "--seed", "-1"], r"--seed must be at least 0 and at most 9,223,372,036,854,775,807, got -1"),
    (["demo", "-d", "0"], rf"--duration must be a positive {SECONDS}, got 0"),
    (["run", "-d", "100000"], r"this run would take about 28 h \(1 build of about 3 s\), more than a day: add --yes "
                              r"to run it all the same"),
    # SQLite keeps these in a C int: beyond it, busy_timeout=2147483648 was stored as given and SQLite used 0
    (["run", "-k", "busy_timeout=2147483648"], r"knob busy_timeout: expected an integer in \[0\.\.2147483647\]"),
    (["run", "-k", "wal_autocheckpoint=2147483648"], r"knob wal_autocheckpoint: expected an integer in "
                                                     r"\[0\.\.2147483647\]"),
    (["run", "-k", "cache_size=-2147483649"], r"knob cache_size: .*within SQLite's -2147483648\.\.2147483647"),
    (["run", "-k", "mmap_size=4GB"], r"knob mmap_size: expected a size of at most \d+ bytes"),
])
def test_a_number_out_of_range_is_one_line_and_nothing_is_built_or_stored(args: list[str], pattern: str,
                                                                          tmp_path: Path) -> None:
    workdir, results = tmp_path / "work", tmp_path / "r.db"
    places = ["--workdir", str(workdir)] + (["--results", str(results)] if args[0] != "load" else [])
    one_line_error(maximus(*args, *places, cwd=tmp_path), 2, pattern)
    assert not results.exists() and not workdir.exists()


@pytest.mark.parametrize("args", [
    ["show", BIG], ["report", "--run", BIG], ["export", "--run", BIG], ["compare", BIG, "1"],
    ["experiment", "show", BIG], ["experiment", "resume", BIG],
])
def test_a_run_or_experiment_number_past_two_to_the_63_is_none_stored(args: list[str], tmp_path: Path) -> None:
    kind = "experiment" if args[0] == "experiment" else "run"
    one_line_error(maximus(*args, "--results", str(tmp_path / "r.db"), cwd=tmp_path), 2,
                   rf"^error: no {kind} {BIG} in {tmp_path}/r.db \(see `maximus (runs|experiment list)`\)$")


def test_compare_refuses_a_threshold_that_is_not_a_percentage(tmp_path: Path) -> None:
    one_line_error(maximus("compare", "1", "2", "--fail-if-slower", "nan", "--results", str(tmp_path / "r.db")), 2,
                   r"--fail-if-slower must be a non-negative percentage, at most 100, got nan")


GOOD = EXPERIMENT.format(name="limits", repeats=2, duration=1.0, baseline="")


@pytest.mark.parametrize(("old", "new", "pattern"), [
    ("warmup = 0", "warmup = inf", rf":8: workload\.warmup: expected a non-negative {SECONDS}, got inf$"),
    ("duration = 1.0", "duration = nan", rf":9: workload\.duration: expected a positive {SECONDS}, got nan$"),
    ("repeats = 2", "repeats = 1000000", r":3: repeats: expected an integer of at least 1 and at most 1,000, got "
                                         r"1000000$"),
    ("clients = [1]\nrepeats = 2", "clients = [1, 2, 3, 4, 5, 6]\nrepeats = 1000",
     r":3: repeats: 2 configuration\(s\) × 6 client count\(s\) × 1000 repeats make 12,000 runs, more than the 10,000 "
     r"an experiment may plan$"),
    ("warehouses = 1", "warehouses = 99999999999", r":7: workload\.warehouses: expected an integer of at least 1 and "
                                                   r"at most 10,000, got 99999999999$"),
    ("clients = [1]", "clients = [0]", r":2: clients: expected a list of client counts such as \[20, 40, 60\], each "
                                       r"an integer of at least 1 and at most 10,000$"),
    ("clients = [1]", "clients = [1]\nseed = 9223372036854775807",
     r":3: seed: the last repeat's seed, seed \+ repeats - 1, would pass 9,223,372,036,854,775,807$"),
    ("duration = 1.0", "duration = 86400", r"experiment 'limits' would take about 4 days \(4 runs of about 24 h, 2 "
                                           r"builds of about 3 s\), more than a day: add --yes to run it all the same"),
])
def test_an_experiment_file_out_of_range_is_one_line_and_nothing_is_stored(old: str, new: str, pattern: str,
                                                                           tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(GOOD.replace(old, new, 1))
    began = time.monotonic()
    result = maximus("experiment", "run", str(path), "--workdir", str(tmp_path / "work"), "--results",
                     str(tmp_path / "r.db"), cwd=tmp_path)
    one_line_error(result, 2, pattern)
    assert time.monotonic() - began < 30  # repeats = 1000000 took 1.4 GB and minutes to plan
    assert not (tmp_path / "r.db").exists() and not (tmp_path / "work").exists()


def test_a_run_past_a_day_starts_with_yes_after_printing_its_estimate(workdir: Path, tmp_path: Path) -> None:
    results = tmp_path / "r.db"
    process = start("run", "--workdir", str(workdir), "--results", str(results), "--warmup", "0", "-d", "100000",
                    "--yes")
    try:
        wait_for(lambda: statuses(results) == ["running"], what="the run to start")
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        stop(process)
    assert process.returncode == 130, stderr
    assert stdout.startswith("Estimated time: about 28 h, and about 3 s more if the database must be built first\n")
    assert [run.status for run in stored(results)] == [RunStatus.INTERRUPTED]


def test_an_experiment_prints_its_estimate_before_its_first_run(tmp_path: Path) -> None:
    result = maximus("experiment", "run", str(experiment_file(tmp_path, repeats=1)), "--workdir",
                     str(tmp_path / "work"), "--results", str(tmp_path / "r.db"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("note: estimated time: about 20 s (2 runs of about 7 s, 2 builds of about 3 s)\n")


def test_a_stored_infinite_warmup_no_longer_breaks_the_listing_or_show(workdir: Path, tmp_path: Path) -> None:
    """An older Maximus stored `--warmup inf`: `runs` and `show` then crashed for the whole results database."""
    results = tmp_path / "r.db"
    for _ in range(2):
        assert maximus("run", "--workdir", str(workdir), "--results", str(results), "--warmup", "0", "-d", "1",
                       "--no-check").returncode == 0
    with sqlite3.connect(results) as db:  # as the older Maximus left it
        db.execute("UPDATE runs SET warmup_s = 9e999, window_start = 9e999, window_end = 9e999 WHERE id = 1")
    listed = maximus("runs", "--results", str(results))
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr
    assert "│ 1 " in listed.stdout and "│ 2 " in listed.stdout
    shown = maximus("show", "1", "--results", str(results))
    assert shown.returncode == 0, shown.stderr
    assert "stored with a warm-up or duration that is not a finite number of seconds" in " ".join(shown.stdout.split())
    assert maximus("show", "2", "--results", str(results)).returncode == 0


def test_a_stored_experiment_with_an_infinite_warmup_resumes_to_one_line(tmp_path: Path) -> None:
    """The same values in an experiment file crashed every resume; its listing still works."""
    results = tmp_path / "r.db"
    store = ResultsStore(results)  # what an older Maximus stored
    store.create_experiment("limits", "exp.toml", GOOD.replace("warmup = 0", "warmup = inf"), {"runs": []})
    store.close()
    resumed = maximus("experiment", "resume", "--workdir", str(tmp_path / "work"), "--results", str(results))
    one_line_error(resumed, 2, rf"^error: exp\.toml:8: workload\.warmup: expected a non-negative {SECONDS}, got inf$")
    listed = maximus("experiment", "list", "--results", str(results))
    assert listed.returncode == 0 and "limits" in listed.stdout


def test_a_setting_the_engine_reports_otherwise_is_a_warning_of_the_run(server_workdir: Path, tmp_path: Path) -> None:
    """PostgreSQL rounds effective_cache_size to its 8-kB pages: asked 12345kB, it runs with 12344kB."""
    results = tmp_path / "r.db"
    result = maximus("run", "-e", "postgres", "-k", "effective_cache_size=12345kB", "--workdir", str(server_workdir),
                     "--results", str(results), "--warmup", "0", "-d", "1", "--no-check")
    assert result.returncode == 0, result.stderr
    (run,) = stored(results)
    assert run.status is COMPLETE
    assert "effective_cache_size=12345kB was asked, but postgres reports 12344kB" in run.warnings
    assert "was asked" not in " ".join(w for w in run.warnings if "effective_cache_size" not in w)
