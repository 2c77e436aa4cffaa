"""The workloads' own options on the command line come from their declarations (Workload.options), with the help
and the one-line refusals they had when the command line wrote them."""

from __future__ import annotations

from pathlib import Path

import typer.main
from typer.testing import CliRunner

from maximus.cli.app import app
from maximus.errors import UserError
from maximus.workloads import WORKLOADS


def _options(command: str) -> dict[str, typer.core.TyperOption]:
    (found,) = [c for c in typer.main.get_command(app).commands.values() if c.name == command]
    return {param.opts[0]: param for param in found.params}


def test_run_offers_every_declared_setting_and_load_and_check_those_that_choose_the_database() -> None:
    declared = {option.flag for workload in WORKLOADS.values() for option in workload.options}
    choosing = {option.flag for workload in WORKLOADS.values() for option in workload.options
                if option.chooses_database}
    assert {"--warehouses", "--keying", "--mix"} <= declared and "--warehouses" in choosing
    assert declared <= set(_options("run"))
    assert set(_options("load")) & declared == set(_options("check")) & declared == choosing


def test_the_help_is_the_declared_sentence_with_the_workloads_default() -> None:
    run = _options("run")
    assert run["--warehouses"].opts == ["--warehouses", "-w"]
    assert run["--warehouses"].help == "TPC-C's scale: number of warehouses \\[default: 1]."
    assert run["--keying"].secondary_opts == ["--no-keying"]
    assert run["--keying"].help == "TPC-C: keying and think times of 5.2.5 (off: TPC-C-like) \\[default: off]."
    assert run["--mix"].help.endswith(" \\[default: deck].")


def test_a_bad_value_is_reported_as_its_option(tmp_path: Path) -> None:
    places = ["--workdir", str(tmp_path / "work")]
    refused = CliRunner().invoke(app, ["load", "-w", "0", *places])
    assert isinstance(refused.exception, UserError)
    assert str(refused.exception) == "--warehouses must be at least 1 and at most 10,000, got 0"
    refused = CliRunner().invoke(app, ["run", "--mix", "new_order=1,bogus=2", *places, "--results",
                                       str(tmp_path / "results.db")])
    assert isinstance(refused.exception, UserError) and str(refused.exception).startswith("--mix: bad mix entry")
    assert not (tmp_path / "work").exists() and not (tmp_path / "results.db").exists()
