"""The ``maximus`` script: what every process a run or a build spawns imports again."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("maximus.cli.app", "maximus.analysis.compare", "scipy", "rich", "typer")


def test_the_maximus_script_imports_a_package_that_brings_nothing_heavy() -> None:
    """Spawned worker processes (the loader's, the terminals') run the script that started Maximus again,
    up to its ``if __name__ == "__main__"``; so the module the script imports must not bring the command
    line with it, or each of them spends 0.85 s of CPU importing it."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module = scripts["maximus"].split(":")[0]
    assert module == "maximus.cli"
    code = f"import sys, {module}; print([m for m in {HEAVY!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    installed = shutil.which("maximus", path=str(Path(sys.executable).parent))
    if installed:  # the script pip generated from it
        assert f"from {module} import main" in Path(installed).read_text()
