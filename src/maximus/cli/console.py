"""The one console every command prints to: piped output is wide enough for the tables."""

from __future__ import annotations

import sys

from rich.console import Console

out = Console(width=None if sys.stdout.isatty() else 120)
