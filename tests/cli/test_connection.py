"""The engines' connection options on the command line come from their declarations (Engine.connection_options)."""

from __future__ import annotations

import typer.main

from maximus.cli.app import app
from maximus.cli.connection import connection_of
from maximus.engines import ENGINES, connection_options
from maximus.engines.postgres import PostgresEngine


def _flags(command: str) -> set[str]:
    (found,) = [c for c in typer.main.get_command(app).commands.values() if c.name == command]
    return {flag for param in found.params for flag in param.opts}


def test_every_command_that_reaches_an_engine_takes_every_declared_option_and_check_no_permission() -> None:
    declared = {option.flag for engine in ENGINES.values() for option in engine.connection_options}
    assert declared == {"--dsn", "--bin-dir", "--allow-changes", "--allow-restart"}
    assert declared <= _flags("run") and declared <= _flags("load")
    assert _flags("check") & declared == {"--dsn", "--bin-dir"}  # a check changes nothing on a server
    assert [option.name for option in connection_options()] == ["dsn", "bin_dir", "allow_changes", "allow_restart"]


def test_the_options_given_become_the_connection_and_a_flag_turns_on_what_it_implies() -> None:
    options = PostgresEngine.connection_options
    assert connection_of(options, {"dsn": "host=x", "bin_dir": None, "allow_changes": False,
                                   "allow_restart": True}) == {"dsn": "host=x", "allow_restart": "yes",
                                                               "allow_changes": "yes"}
    # named before the flag it implies, so that a refusal names the one the user gave
    assert list(connection_of(options, {"allow_changes": True, "allow_restart": True})) == ["allow_restart",
                                                                                          "allow_changes"]
    assert connection_of(options, {"allow_changes": True}) == {"allow_changes": "yes"}


def test_an_option_several_engines_declare_has_each_engines_own_help() -> None:
    """``--dsn`` is each engine's: its help, declared with the engine, names the engine and its form of address."""
    merged = {option.name: option.help for option in connection_options()}
    for engine in ENGINES.values():
        for option in engine.connection_options:
            assert option.help in merged[option.name], (engine.name, option.name)
    dsn = {engine.name: option.help for engine in ENGINES.values() for option in engine.connection_options
           if option.name == "dsn"}
    postgres = dsn["postgres"]
    assert postgres.startswith("PostgreSQL: ") and "host=" in postgres and "mysql://" not in postgres
    assert dsn["mariadb"].startswith("MariaDB: ") and "mysql://" in dsn["mariadb"]
    assert merged["dsn"] == f"{dsn['postgres']} {dsn['mariadb']}"
