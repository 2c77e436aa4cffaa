"""What an engine logs for the user reaches the console as a note, once, between the lines of progress."""

from __future__ import annotations

import logging

import pytest
from rich.console import Console

from maximus.cli import app as cli


def test_an_engines_log_line_is_printed_as_a_note_once(monkeypatch: pytest.MonkeyPatch) -> None:
    console = Console(record=True, width=200)
    monkeypatch.setattr(cli, "out", console)
    logger = logging.getLogger("maximus")
    before = list(logger.handlers)
    try:
        cli._print_notes()
        cli._print_notes()  # main() of a second command in one process: still one note per line
        logging.getLogger("maximus.engines.postgres").info("stopping the PostgreSQL server %d [of %s]", 42, "x")
        logging.getLogger("maximus.engines.postgres").debug("not for the user")
        logging.getLogger("elsewhere").warning("not ours")
    finally:
        logger.handlers[:] = before
    assert console.export_text() == "note: stopping the PostgreSQL server 42 [of x]\n"
