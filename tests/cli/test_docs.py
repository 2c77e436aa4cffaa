"""README.md and docs/ together document every command, every option and every knob, and their links lead
somewhere: these tests fail when one is missing or broken."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from maximus import system
from maximus.cli.app import app
from maximus.engines import ENGINES

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# The documentation a user reads: the README and every page of docs/, by their path in the repository.
DOCS = {path.relative_to(ROOT).as_posix(): path.read_text()
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
# Pages whose links are checked too: the documentation, and the benchmarks' own README.
LINKED = {**DOCS, "bench/README.md": (ROOT / "bench" / "README.md").read_text()}
README_MAX_LINES = 300


def _commands(group, prefix: str = "") -> dict:
    """Every leaf command, nested groups included: {"run": cmd, "experiment run": cmd, ...}."""
    found = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[f"{prefix}{name}"] = command
    return found


COMMANDS = _commands(typer.main.get_command(app))


def _section(command: str) -> str:
    """The one section `### maximus COMMAND ...` in README.md or docs/, up to the next heading or the page's end."""
    pattern = rf"^### `maximus {command}(?: [^`]*)?`\n(.*?)(?=^#{{1,3}} |\Z)"
    found = [(page, match.group(1)) for page, text in DOCS.items()
             for match in re.finditer(pattern, text, re.S | re.M)]
    assert found, f"neither README.md nor docs/ has a section '### `maximus {command}`'"
    assert len(found) == 1, f"`maximus {command}` has a section in each of {[page for page, _ in found]}: keep one"
    return found[0][1]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_and_option_is_documented(command: str) -> None:
    section = _section(command)
    for param in COMMANDS[command].params:
        for flag in [*param.opts, *getattr(param, "secondary_opts", [])]:
            if flag.startswith("--"):
                assert f"`{flag}" in section, f"{flag} of `maximus {command}` is not in its section"


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_every_knob_is_documented(engine: str) -> None:
    documented = "\n".join(DOCS.values())
    for name in ENGINES[engine].documented_knobs():
        assert f"| `{name}` |" in documented, f"knob {name} of {engine} is in no table of README.md or docs/"


def test_every_operating_system_knob_is_documented() -> None:
    table = DOCS["docs/os.md"]
    for knob in system.OS:
        assert f"| `{knob.name}` |" in table, f"operating-system knob {knob.name} is in no table of docs/os.md"


def test_quick_start_has_exactly_two_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", quick, re.S).group(1)
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make demo", "make test"]


def test_the_readme_is_short() -> None:
    lines = len(README.splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move topics to docs/"


def _anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, and a
    heading met again numbered (-1, -2, ...)."""
    anchors: set[str] = set()
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)  # no headings inside code blocks
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, number = slug, 0
        while anchor in anchors:
            number += 1
            anchor = f"{slug}-{number}"
        anchors.add(anchor)
    return anchors


def _links(markdown: str) -> list[str]:
    """The targets of a page's inline links and images, outside code."""
    text = re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", sorted(LINKED))
def test_every_link_leads_to_a_file_and_a_heading(page: str) -> None:
    for link in _links(LINKED[page]):
        if re.match(r"[a-z]+:", link):  # https:, mailto: ...: not this repository's
            continue
        path, _, anchor = link.partition("#")
        target = (ROOT / page).parent / path if path else ROOT / page
        assert target.exists(), f"{page} links to {link}, which does not exist"
        if anchor:
            assert target.suffix == ".md", f"{page} links to an anchor of {link}, which is not a page"
            assert anchor in _anchors(target.read_text()), f"{page} links to {link}: {path or page} has no such heading"
