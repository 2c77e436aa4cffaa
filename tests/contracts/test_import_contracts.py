"""The import contracts of pyproject.toml fail where the flow is broken: the same linter on a scratch copy of the
source with one import that breaks it, from the read side into the run side, from generic code into one
engine's package, or from the command line below the api."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CLI_OVER_API = "The command line calls the api's verbs and nothing below them"


def _lint(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                          capture_output=True, text=True, timeout=120, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree / "src")})


def _scratch(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    return tmp_path


def test_the_source_as_it_is_keeps_every_contract(tmp_path: Path) -> None:
    done = _lint(_scratch(tmp_path))
    assert done.returncode == 0 and "0 broken" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(("module", "probe", "contract"), [
    ("analysis/metrics.py", "import maximus.runs", "The read side imports nothing of the run side"),
    ("report/html.py", "from maximus.driver import scheduler", "The read side imports nothing of the run side"),
    ("analysis/run.py", "from maximus.workloads import workload", "The read side imports nothing of the run side"),
    ("export.py", "from maximus.workloads.base import Headline", "The read side imports nothing of the run side"),
    ("store/store.py", "import maximus.analysis.metrics", "The core imports neither wing"),
    ("experiment/plan.py", "from maximus.workloads import workload", "The core imports neither wing"),
    ("analysis/metrics.py", "import maximus.report.format", "Layers of the read side"),
    ("workloads/base.py", "import maximus.driver.clock", "Layers of the run side"),
    ("records.py", "import maximus.store", "Layers of the core"),
    ("api.py", "import maximus.cli", "The CLI is over the api"),
    ("runs.py", "import maximus.engines.postgres", "Generic code imports no one engine's or workload's package"),
    ("runs.py", "from maximus.analysis import metrics", "The run side imports nothing of the read side"),
    ("driver/scheduler.py", "import maximus.report.console", "The run side imports nothing of the read side"),
    ("cli/app.py", "from maximus.store import ResultsStore", CLI_OVER_API),
    ("cli/reports.py", "from maximus.workloads.base import SettingError", CLI_OVER_API),
])
def test_a_probe_import_that_breaks_the_flow_breaks_its_contract(tmp_path: Path, module: str, probe: str,
                                                                 contract: str) -> None:
    tree = _scratch(tmp_path)
    target = tree / "src" / "maximus" / module
    target.write_text(target.read_text() + f"\n{probe}  # the probe\n")
    done = _lint(tree)
    assert done.returncode != 0, done.stdout
    assert _verdict(done.stdout, contract) == "BROKEN", done.stdout


def _verdict(report: str, contract: str) -> str:
    """KEPT or BROKEN: the word after the contract whose name starts with ``contract`` in the linter's summary
    (which wraps long names over lines)."""
    words = " ".join(report.split()).split(f"{contract}", 1)[1].split()
    return next(word for word in words if word in ("KEPT", "BROKEN"))
