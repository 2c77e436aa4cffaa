"""``maximus report`` (one self-contained HTML file) and ``maximus export`` (JSON or CSV).

Both take an experiment number, or a single run with ``--run``; the newest experiment by default.
``write_experiment_report`` is also called at the end of ``maximus experiment run`` and ``resume``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from maximus import api
from maximus.cli.console import out
from maximus.errors import UserError

FORMATS = ("json", "csv")

Experiment = Annotated[Optional[int], typer.Argument(
    metavar="[EXPERIMENT]", help="Experiment number, from `maximus experiment list` [default: the newest].")]
Run = Annotated[Optional[int], typer.Option("--run", metavar="N", help="A single run instead of an experiment.")]
Results = Annotated[Optional[Path], typer.Option(
    "--results", help="Results database [default: $MAXIMUS_RESULTS or ~/.local/share/maximus/results.db].")]


def report(experiment: Experiment = None, run: Run = None,
           output: Annotated[Optional[Path], typer.Option(
               "--output", "-o", metavar="PATH", help="Where to write the HTML file [default: "
               "./maximus-report-<experiment>.html, or ./maximus-report-run-<run>.html with --run].")] = None,
           results: Results = None) -> None:
    """Write one self-contained HTML report (tables and charts; no network needed to view it)."""
    path = api.report(experiment, run, output, results)
    out.print(f"Report written to {path}")


def write_experiment_report(console: Console, experiment_id: int, results: Path | None) -> Path | None:
    """The report at the end of an experiment, in the current directory; a failure to write it is a warning."""
    try:
        path = api.report(experiment_id, results=results)
    except UserError as error:
        console.print(f"[yellow]warning:[/] no HTML report: {error}")
        return None
    console.print(f"Report: {path} (`maximus report {experiment_id} -o PATH` writes it again)")
    return path


def export(experiment: Experiment = None, run: Run = None,
           output_format: Annotated[str, typer.Option(
               "--format", "-f", help="json (every figure and the raw series in one document) or csv (one row "
               "per run).")] = "json",
           series: Annotated[bool, typer.Option("--series", help="CSV only: the raw time series instead (per-second "
                                                "throughput and every monitoring sample).")] = False,
           cells: Annotated[bool, typer.Option("--cells", help="CSV only: one row per step and client count, and "
                                               "rate in a rate sweep (estimates, ratios, verdicts) instead.")] = False,
           result_file: Annotated[bool, typer.Option(
               "--result-file", help="CSV only: the Delivery result file (2.7.2.3) instead: one row per Delivery, "
               "each district's order or 'skipped'.")] = False,
           samples: Annotated[bool, typer.Option(
               "--samples", help="CSV only: the raw samples instead: one row per transaction of each run (terminal, "
               "transaction, start, latency, outcome, attempts, error, intended start).")] = False,
           output: Annotated[Optional[Path], typer.Option(
               "--output", "-o", metavar="PATH", help="Write to PATH instead of standard output.")] = None,
           results: Results = None) -> None:
    """Export every figure of an experiment or a run, and the raw time series, as JSON or CSV."""
    _check_export_options(output_format, series, cells, result_file, samples, run)
    if samples:
        _export_samples(experiment, run, output, results)
        return
    table = "series" if series else "cells" if cells else "result_file" if result_file else "runs"
    text = api.export(experiment, run, output_format, table, output, results)
    if output is None:
        sys.stdout.write(text)


def _export_samples(experiment: int | None, run: int | None, output: Path | None, results: Path | None) -> None:
    """A run's samples may be millions of rows: written as they are made, to standard output, or to a file beside
    ``output`` that replaces it once whole (a failed export leaves ``output`` as it was)."""
    runs = api.exported_runs(experiment, run, results)  # an unknown run fails here, before any file is touched
    if output is None:
        api.export_samples(sys.stdout, runs, results)
        return
    partial = output.parent / f".{output.name}.{os.getpid()}.partial"
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "w", encoding="utf-8",
                       newline="") as out:  # made as the file itself would be, under the umask
            try:
                api.export_samples(out, runs, results)
            except BaseException:
                partial.unlink()
                raise
        _replace(partial, output)
    except OSError as error:
        raise UserError(f"cannot write {output}: {error.strerror or error}") from None


def _replace(written: Path, output: Path) -> None:
    try:
        os.replace(written, output)
    except OSError:
        written.unlink()
        raise


def _check_export_options(output_format: str, series: bool, cells: bool, result_file: bool, samples: bool,
                          run: int | None) -> None:
    if output_format not in FORMATS:
        raise UserError(f"--format must be json or csv, got {output_format!r}")
    if (series or cells or result_file or samples) and output_format != "csv":
        raise UserError("--series, --cells, --result-file and --samples choose a CSV table: add --format csv (JSON "
                        "always has every figure)")
    if series + cells + result_file + samples > 1:
        raise UserError("choose one CSV table: --series, --cells, --result-file or --samples")
    if cells and run is not None:
        raise UserError("--cells needs an experiment: a single run has no steps or repeats")
