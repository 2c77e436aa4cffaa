"""``maximus experiment run|resume|show|list`` and ``maximus compare``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from maximus import api, limits
from maximus.cli.console import out
from maximus.cli.reports import write_experiment_report
from maximus.errors import EngineError, MaximusError
from maximus.report.charts import clients_label
from maximus.report.device import device_table
from maximus.report.experiment_console import render_comparison, render_experiment, render_experiments
from maximus.report.tables import experiment_notices
from maximus.report.progress import RunCountdown

experiment_app = typer.Typer(no_args_is_help=True, help="Run experiments: a baseline, then one change per step.")

Workdir = Annotated[Optional[Path], typer.Option(
    "--workdir", help="Where databases are built \\[default: $MAXIMUS_WORKDIR or ./maximus-work].")]
Results = Annotated[Optional[Path], typer.Option(
    "--results", help="Results database [default: $MAXIMUS_RESULTS or ~/.local/share/maximus/results.db].")]
RayAddress = Annotated[Optional[str], typer.Option(
    "--ray", metavar="ADDRESS", help="Run each run's terminals from client hosts, the nodes of the Ray cluster at "
    "ADDRESS (host:port of its head): as many as the file's hosts (1 by default).")]


class RegressionFound(MaximusError):
    """``compare --fail-if-slower`` found B slower than allowed."""

    exit_code = 5


class ConsoleProgress:
    """The runner's observer: one line per run, a live countdown during it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._countdown: RunCountdown | None = None
        self.failed: list[tuple[int | None, str]] = []  # (run, cause) of each run that failed here

    def run_starting(self, position: int, total: int, planned: api.PlannedRun) -> RunCountdown:
        build = " · builds its database" if planned.build else ""
        rate = f" · {planned.rate:,g}/s" if planned.rate is not None else ""
        self.console.print(f"[bold]run {position}/{total}[/] · step {planned.step} {planned.step_name!r} · "
                           f"{clients_label(planned.clients)}{rate} · repeat {planned.repeat}{build}")
        self._countdown = RunCountdown(self.console)
        return self._countdown

    def run_finished(self, planned: api.PlannedRun, run_id: int | None, error: str | None) -> None:
        if self._countdown:
            self._countdown.stop()
        if error:
            self.failed.append((run_id, error))
            self.console.print(f"  [red]run {run_id} failed:[/] {error}")
        else:
            self.console.print(f"  stored as run {run_id}")

    def note(self, message: str) -> None:
        if self._countdown:  # a note can end a run (Ctrl-C): the countdown goes first
            self._countdown.stop()
        self.console.print(f"[yellow]note:[/] {message}")


def show_experiment(console: Console, experiment_id: int, results: Path | None) -> None:
    data = api.show_experiment(experiment_id, results)
    render_experiment(console, data.report, experiment_notices(data), device_table(data), data.rate_curves)


def finish_experiment(console: Console, experiment_id: int, results: Path | None,
                      progress: ConsoleProgress | None = None) -> None:
    """The end of every experiment: its step tables and summary, then its HTML report; then, when runs failed
    here, an error that names the first (exit code 3): the experiment went on without them."""
    show_experiment(console, experiment_id, results)
    write_experiment_report(console, experiment_id, results)
    if progress and progress.failed:
        run_id, cause = progress.failed[0]
        raise EngineError(f"{len(progress.failed)} run(s) of experiment {experiment_id} failed and count in none of "
                          f"its figures; the first, run {run_id}: {cause}")


@experiment_app.command("run")
def run_command(file: Annotated[Path, typer.Argument(metavar="FILE", help="Experiment file (TOML).")],
                workdir: Workdir = None, results: Results = None,
                yes: Annotated[bool, typer.Option("--yes", help="Run a plan estimated to take more than a day "
                                                  "(asked for otherwise).")] = False,
                ray: RayAddress = None) -> None:
    """Validate FILE, then run every planned run, storing each as it ends; print the step tables."""
    progress = ConsoleProgress(out)
    finish_experiment(out, api.run_experiment(file, progress, workdir, results, yes=yes, ray_address=ray), results,
                      progress)


@experiment_app.command("resume")
def resume_command(experiment_id: Annotated[Optional[int], typer.Argument(
        metavar="[EXPERIMENT]", help="Experiment number [default: the newest unfinished one].")] = None,
        workdir: Workdir = None, results: Results = None, ray: RayAddress = None) -> None:
    """Run what is left of a stopped experiment; finished runs are never run again."""
    progress = ConsoleProgress(out)
    finish_experiment(out, api.resume_experiment(experiment_id, progress, workdir, results, ray), results, progress)


@experiment_app.command("show")
def show_command(experiment_id: Annotated[int, typer.Argument(metavar="EXPERIMENT", help="Experiment number.")],
                 results: Results = None) -> None:
    """Print an experiment's step tables and summary, recomputed from the stored samples."""
    show_experiment(out, experiment_id, results)


@experiment_app.command("list")
def list_command(results: Results = None) -> None:
    """List the stored experiments."""
    render_experiments(out, api.list_experiments(results))


def compare(a: Annotated[str, typer.Argument(metavar="A", help="Run number, or step name/index with --experiment.")],
            b: Annotated[str, typer.Argument(metavar="B", help="Run number, or step name/index with --experiment.")],
            experiment: Annotated[Optional[int], typer.Option("--experiment", help="Compare steps of this "
                                                              "experiment instead of runs.")] = None,
            clients: Annotated[Optional[int], typer.Option("--clients", help="Client count of the steps to "
                                                           "compare [default: the largest].")] = None,
            rate: Annotated[Optional[float], typer.Option("--rate", help="A rate sweep's rate (transactions per "
                                                          "second) at which to compare the steps [default: the "
                                                          "highest].")] = None,
            fail_if_slower: Annotated[Optional[float], typer.Option(
                "--fail-if-slower", metavar="PCT", help="Exit with code 5 when B is significantly slower than A "
                "by more than PCT percent.")] = None,
            as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
            results: Results = None) -> None:
    """Compare tpmC of two runs or two steps (two fixed-rate ones: their p90 latency): ratio B/A with its 95 %
    interval and a verdict."""
    if fail_if_slower is not None:
        limits.check("--fail-if-slower", fail_if_slower, limits.PERCENT)
    comparison = api.compare(a, b, experiment, clients, results, rate)
    if as_json:
        print(json.dumps(_as_json(comparison), indent=2))
    else:
        render_comparison(out, comparison)
    _gate(comparison, fail_if_slower)


def _as_json(comparison: api.Comparison) -> dict:
    ratio = comparison.ratio
    clean = (lambda v: None if math.isnan(v) else v)
    return {"a": {"label": comparison.a_label, "values": comparison.a_values},
            "b": {"label": comparison.b_label, "values": comparison.b_values},
            "metric": comparison.figure, "higher_is_better": comparison.higher_is_better,
            "method": comparison.method, "ratio": clean(ratio.ratio), "low": clean(ratio.low),
            "high": clean(ratio.high), "change_percent": clean(ratio.change_percent),
            "verdict": ratio.verdict.value, "repeats_needed": ratio.repeats_needed,
            "differences": [{"what": what, "a": a, "b": b} for what, a, b in comparison.differences]}


def _gate(comparison: api.Comparison, fail_if_slower: float | None) -> None:
    ratio = comparison.ratio
    if fail_if_slower is None or ratio.verdict.value != "slower":
        return
    if comparison.loss_percent > fail_if_slower:
        raise RegressionFound(f"{comparison.b_label} is {comparison.loss_percent:.1f} % slower than "
                              f"{comparison.a_label} (more than the allowed {fail_if_slower:g} %)")
