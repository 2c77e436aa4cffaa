"""``maximus report`` (one self-contained HTML file) and ``maximus export`` (JSON or CSV).

Both take an experiment number, or a single run with ``--run``; the newest experiment by default.
``write_experiment_report`` is also called at the end of ``maximus experiment run`` and ``resume``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console

from maximus import api
from maximus.cli.console import out
from maximus.errors import UserError
from maximus.store import ResultsStore, default_results_path

if TYPE_CHECKING:  # loaded when used: scipy and plotly would slow every command's start
    from maximus.analysis.bundle import ExperimentData, RunData

FORMATS = ("json", "csv")

Experiment = Annotated[Optional[int], typer.Argument(
    metavar="[EXPERIMENT]", help="Experiment number, from `maximus experiment list` [default: the newest].")]
Run = Annotated[Optional[int], typer.Option("--run", metavar="N", help="A single run instead of an experiment.")]
Results = Annotated[Optional[Path], typer.Option(
    "--results", help="Results database [default: $MAXIMUS_RESULTS or ~/.local/share/maximus/results.db].")]


def default_report_path(experiment_id: int | None = None, run_id: int | None = None) -> Path:
    """``maximus-report-<experiment>.html`` (or ``maximus-report-run-<run>.html``) in the current directory."""
    return Path(f"maximus-report-run-{run_id}.html" if run_id is not None else f"maximus-report-{experiment_id}.html")


def _experiment(store: ResultsStore, experiment_id: int | None) -> int:
    """The experiment named, or the newest one."""
    if experiment_id is not None:
        return experiment_id
    experiments = store.experiments()
    if not experiments:
        raise UserError(f"no experiment in {store.path}: name a run with --run N, or run an experiment first")
    return experiments[-1].id


def _gather(results: Path | None, experiment_id: int | None, run_id: int | None) -> ExperimentData | RunData:
    from maximus.analysis.bundle import gather_experiment, gather_run

    store = api.open_results(results or default_results_path())
    try:
        if run_id is None:
            return gather_experiment(store, _experiment(store, experiment_id))
        if experiment_id is not None:
            raise UserError("give an experiment number or --run N, not both")
        return gather_run(store, run_id)
    finally:
        store.close()


def render(data: ExperimentData | RunData) -> str:
    from maximus.report import html
    from maximus.analysis.bundle import RunData

    return html.run_page(data) if isinstance(data, RunData) else html.experiment_page(data)


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror or error}") from None


def report(experiment: Experiment = None, run: Run = None,
           output: Annotated[Optional[Path], typer.Option(
               "--output", "-o", metavar="PATH", help="Where to write the HTML file [default: "
               "./maximus-report-<experiment>.html, or ./maximus-report-run-<run>.html with --run].")] = None,
           results: Results = None) -> None:
    """Write one self-contained HTML report (tables and charts; no network needed to view it)."""
    from maximus.analysis.bundle import RunData

    data = _gather(results, experiment, run)
    path = output or (default_report_path(run_id=data.id) if isinstance(data, RunData)
                      else default_report_path(data.report.record.id))
    _write(path, render(data))
    out.print(f"Report written to {path}")


def write_experiment_report(console: Console, experiment_id: int, results: Path) -> Path | None:
    """The report at the end of an experiment, in the current directory; a failure to write it is a warning."""
    path = default_report_path(experiment_id)
    try:
        _write(path, render(_gather(results, experiment_id, None)))
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
           cells: Annotated[bool, typer.Option("--cells", help="CSV only: one row per step and client count "
                                               "(estimates, ratios, verdicts) instead.")] = False,
           result_file: Annotated[bool, typer.Option(
               "--result-file", help="CSV only: the Delivery result file (2.7.2.3) instead: one row per Delivery, "
               "each district's order or 'skipped'.")] = False,
           output: Annotated[Optional[Path], typer.Option(
               "--output", "-o", metavar="PATH", help="Write to PATH instead of standard output.")] = None,
           results: Results = None) -> None:
    """Export every figure of an experiment or a run, and the raw time series, as JSON or CSV."""
    _check_export_options(output_format, series, cells, result_file, run)
    data = _gather(results, experiment, run)
    text = _export_text(data, output_format, series, cells, result_file)
    if output is None:
        sys.stdout.write(text)
    else:
        _write(output, text)


def _check_export_options(output_format: str, series: bool, cells: bool, result_file: bool, run: int | None) -> None:
    if output_format not in FORMATS:
        raise UserError(f"--format must be json or csv, got {output_format!r}")
    if (series or cells or result_file) and output_format != "csv":
        raise UserError("--series, --cells and --result-file choose a CSV table: add --format csv (JSON always has "
                        "everything)")
    if series + cells + result_file > 1:
        raise UserError("choose one CSV table: --series, --cells or --result-file")
    if cells and run is not None:
        raise UserError("--cells needs an experiment: a single run has no steps or repeats")


def _export_text(data: ExperimentData | RunData, output_format: str, series: bool, cells: bool,
                 result_file: bool) -> str:
    from maximus import export as exporting
    from maximus.analysis.bundle import RunData

    runs = [data] if isinstance(data, RunData) else list(data.runs)
    if output_format == "json":
        document = exporting.run_document(data) if isinstance(data, RunData) else exporting.experiment_document(data)
        return exporting.to_json(document)
    if series:
        return exporting.to_csv(*exporting.series_table(runs))
    if cells and not isinstance(data, RunData):  # a run alone has no cells: refused before (_check_export_options)
        return exporting.to_csv(*exporting.cells_table(data))
    if result_file:
        return exporting.to_csv(*exporting.result_file_table(runs))
    return exporting.to_csv(*exporting.runs_table(runs))
