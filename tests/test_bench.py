"""The benchmarks under bench/ are run by hand, not by the suite: each must still import against today's code, or
it rots unseen (a renamed function, a moved module)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda path: path.name)
def test_each_benchmark_imports_against_todays_code(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # as an import would: its dataclasses look it up
    spec.loader.exec_module(module)  # its top level only: main() runs under __name__ == "__main__"
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
