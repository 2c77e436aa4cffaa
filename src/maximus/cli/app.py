"""``maximus``: commands demo, load, run, crashtest, crashtests, check, runs, show.

User errors end in one line on stderr and exit code 2; a traceback means a bug.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, Optional, Sequence

import typer
from rich.markup import escape
from typer.exceptions import Abort, Exit, TyperException

from maximus import __version__, api, limits
from maximus.cli.connection import with_connection_options
from maximus.cli.crashtests import CrashProgress
from maximus.cli.console import out
from maximus.cli.experiments import ConsoleProgress, compare, experiment_app, finish_experiment
from maximus.cli.reports import export, report
from maximus.cli.system import system_app
from maximus.cli.workload_options import as_option, with_workload_options
from maximus.errors import ConsistencyError, EngineError, MaximusError, UserError, cause
from maximus.records import MAX_FAILED_PERCENT, RunStatus
from maximus.report import console as view
from maximus.report.durability import render_crash_tests
from maximus.report.hosts import render_client_hosts
from maximus.report.schedule import render_schedule
from maximus.report.progress import LoadBars, RunCountdown

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Maximus: benchmark a database with TPC-C and find out which change makes it faster.")

Engine = Annotated[str, typer.Option("--engine", "-e", help=f"Database engine: {' or '.join(api.engines())}.")]
Connection = Optional[dict[str, str]]  # the engines' connection options (cli/connection.py) stand in its place
Settings = Optional[dict[str, Any]]  # the workloads' own options (cli/workload_options.py) stand in its place
Knobs = Annotated[Optional[list[str]], typer.Option(
    "--knob", "-k", help="Engine or operating-system setting NAME=VALUE, repeatable (e.g. -k journal_mode=wal, "
    "-k vm.dirty_ratio=5).")]
AllowSystemChanges = Annotated[bool, typer.Option("--allow-system-changes", help="Let Maximus change the "
                               "operating-system knobs given with -k (as root); they are put back after.")]
WorkloadName = Annotated[str, typer.Option("--workload", help="The workload: tpcc, or another registered one (its "
                                           "other settings come from an experiment file).")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of every random stream (load and run).")]
Workdir = Annotated[Optional[Path], typer.Option(
    "--workdir", help="Where databases are built \\[default: $MAXIMUS_WORKDIR or ./maximus-work].")]
Results = Annotated[Optional[Path], typer.Option(
    "--results", help="Results database [default: $MAXIMUS_RESULTS or ~/.local/share/maximus/results.db].")]
Terminals = Annotated[int, typer.Option("--terminals", "-t", help="Concurrent terminals (virtual users).")]
Warmup = Annotated[float, typer.Option("--warmup", help="Seconds of warm-up, excluded from results.")]
Duration = Annotated[float, typer.Option("--duration", "-d", help="Seconds of the measured window.")]
RayAddress = Annotated[Optional[str], typer.Option("--ray", metavar="ADDRESS", help="Run the terminals from client "
                                                  "hosts, the nodes of the Ray cluster at ADDRESS (host:port of its "
                                                  "head), each with the terminals of its own warehouses; a build the "
                                                  "run makes, each loading its own warehouses.")]
HostCount = Annotated[int, typer.Option("--hosts", metavar="N", help="With --ray: client hosts, one Ray node each.")]
Yes = Annotated[bool, typer.Option("--yes", help="Run a plan estimated to take more than a day (asked for "
                                   "otherwise).")]


def _version(shown: bool) -> None:
    if shown:
        out.print(f"maximus {__version__}", highlight=False)
        raise Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                                help="Print Maximus's version and exit.")] = False) -> None:
    pass  # the options of ``maximus`` itself, before a command: --version


def _options(engine: str, knobs: list[str] | None, settings: dict[str, Any] | None, workdir: Path | None,
             results: Path | None, connection: dict[str, str] | None, workload: str,
             **rest: Any) -> api.BenchmarkOptions:
    """The command's options, validated; the workload's settings come from the options it declares, so a bad
    one is reported as that option."""
    options = api.BenchmarkOptions(engine=engine, knobs=api.parse_knobs(knobs or []), workload=workload,
                                   settings=settings or {}, workdir=workdir or api.default_workdir(),
                                   results=results or api.default_results_path(), connection=connection or {},
                                   **rest)
    try:
        options.validate()
    except api.SettingError as error:
        raise as_option(error, workload) from None
    return options


@app.command()
def demo(workdir: Workdir = None, results: Results = None,
         duration: Duration = 10.0, yes: Yes = False) -> None:
    """Run a small experiment on SQLite (baseline, page size 8K, WAL; 2 repeats; about two minutes)."""
    limits.check("--duration", duration, limits.DURATION_S)
    workdir, results = workdir or api.default_workdir(), results or api.default_results_path()
    out.print(f"[bold]Maximus demo[/]: TPC-C on SQLite, 1 warehouse, 2 terminals; baseline and two steps, "
              f"2 repeats of {duration:g} s each (databases in {workdir}, results in {results})")
    progress = ConsoleProgress(out)
    experiment_id = api.run_demo(duration, progress, workdir, results, yes=yes)
    report = api.last_complete_run(experiment_id, results)
    if report:
        out.rule(f"The last run in detail (run {report.record.id})")
        _show(report, histograms=False, environment=False)
    out.rule("The experiment")
    finish_experiment(out, experiment_id, results, progress)


@app.command()
@with_connection_options("text", "path", "flag")
@with_workload_options(chooses_database=True)
def load(engine: Engine = "sqlite", knob: Knobs = None, settings: Settings = None, seed: Seed = 1,
         workdir: Workdir = None, connection: Connection = None, workload: WorkloadName = "tpcc",
         allow_system_changes: AllowSystemChanges = False,
         ray: Annotated[Optional[str], typer.Option("--ray", metavar="ADDRESS", help="Load from client hosts, the "
                                                    "nodes of the Ray cluster at ADDRESS (host:port of its head), "
                                                    "each its own warehouses.")] = None,
         hosts: HostCount = 1) -> None:
    """Build a TPC-C database from scratch (timed) and keep a pristine copy for later runs."""
    options = _options(engine, knob, settings, workdir, None, connection, workload, seed=seed,
                       system_changes=allow_system_changes, ray_address=ray, hosts=hosts,
                       terminals=max(hosts, 1))  # a build's hosts need homes, not terminals
    loaded = api.load(options, LoadBars(out))
    out.print(f"Loaded {loaded.scale}, {loaded.rows:,} rows in [bold]{loaded.seconds:,.1f} s[/] into {loaded.path}")
    if loaded.host_load_s:
        out.print("Client hosts' loads of their own warehouses: "
                  + ", ".join(f"host {n} {seconds:,.1f} s" for n, seconds in enumerate(loaded.host_load_s, 1)))


@app.command()
@with_connection_options("text", "path", "flag")
@with_workload_options()
def run(engine: Engine = "sqlite", knob: Knobs = None, settings: Settings = None, terminals: Terminals = 2,
        warmup: Warmup = 5.0, duration: Duration = 30.0, seed: Seed = 1,
        check: Annotated[bool, typer.Option("--check/--no-check",
                                            help="Check consistency (3.3.2) after the run.")] = True,
        rebuild: Annotated[bool, typer.Option("--rebuild", help="Build the database again even if a "
                                              "pristine copy exists.")] = False,
        monitor: Annotated[bool, typer.Option("--monitor/--no-monitor", help="Sample OS and engine statistics "
                                              "every second during the run.")] = True,
        transactions: Annotated[str, typer.Option("--transactions", help="client (SQL sent by the driver), "
                                                  "server (one stored-function call each), or auto: server "
                                                  "where the engine has stored functions.")] = "auto",
        max_failed: Annotated[float, typer.Option("--max-failed", metavar="PCT", help="Fail the run when more than "
                                                  "PCT % of the transactions in its window failed.")]
        = MAX_FAILED_PERCENT,
        device_limit: Annotated[bool, typer.Option("--device-limit/--no-device-limit", help="Before a storage-bound "
                                                   "workload's run, measure the device with fio's matching job, and "
                                                   "hold the run against it.")] = True,
        rate: Annotated[Optional[float], typer.Option("--rate", metavar="TPS", help="Fixed throughput: start "
                                                      "TPS transactions a second over all terminals, each at its "
                                                      "intended start, and measure latency from it (coordinated "
                                                      "omission avoided). Without it, closed loop.")] = None,
        arrivals: Annotated[str, typer.Option("--arrivals", help="With --rate: regular (evenly spaced) or poisson "
                                              "(exponential gaps, seeded) arrivals.")] = "regular",
        ray: RayAddress = None, hosts: HostCount = 1,
        workdir: Workdir = None, results: Results = None, connection: Connection = None, yes: Yes = False,
        workload: WorkloadName = "tpcc", allow_system_changes: AllowSystemChanges = False) -> None:
    """Load if needed, then run the TPC-C mix and store the results (every run starts from pristine data)."""
    options = _options(engine, knob, settings, workdir, results, connection, workload, terminals=terminals,
                       warmup_s=warmup, duration_s=duration, seed=seed, check=check, rebuild=rebuild, monitor=monitor,
                       transactions=transactions, max_failed_percent=max_failed, system_changes=allow_system_changes,
                       device_limit=device_limit, rate=rate, arrivals=arrivals, ray_address=ray, hosts=hosts)
    _announce(options.estimate(), yes)
    _run_and_show(options)


def _announce(estimate: limits.Estimate, yes: bool) -> None:
    """The run's estimated time, before it starts; one estimated to take more than a day needs ``--yes``."""
    estimate.confirm(yes, "this run")
    out.print(f"Estimated time: about {limits.spoken(estimate.run_s)}, and about {limits.spoken(estimate.build_s)} "
              "more if the database must be built first")


@app.command()
@with_connection_options("text", "path", "flag")
@with_workload_options()
def crashtest(engine: Engine = "sqlite", knob: Knobs = None, settings: Settings = None, terminals: Terminals = 4,
              mode: Annotated[str, typer.Option("--mode", help="process: SIGKILL every server process (an embedded "
                                                "engine's: the terminals); power: a power cut of the power-cut layer "
                                                "its files are on.")] = "process",
              crashes: Annotated[int, typer.Option("--crashes", "-n", help="Crash, recovery and verification cycles, "
                                                   "each from the pristine database.")] = 1,
              warmup: Annotated[float, typer.Option("--warmup", help="Seconds the terminals run before the crash "
                                                    "may fall.")] = 1.0,
              duration: Annotated[float, typer.Option("--duration", "-d", help="Seconds after the warm-up in which "
                                                      "the crash falls, at a moment the seed draws.")] = 5.0,
              seed: Seed = 1, rebuild: Annotated[bool, typer.Option("--rebuild", help="Build the database again even "
                                                                    "if a pristine copy exists.")] = False,
              transactions: Annotated[str, typer.Option("--transactions", help="client, server or auto, as for "
                                                        "`run`.")] = "auto",
              workdir: Workdir = None, results: Results = None, connection: Connection = None,
              workload: WorkloadName = "tpcc", allow_system_changes: AllowSystemChanges = False) -> None:
    """Crash the database under busy terminals, recover it, and count the acknowledged commits it lost (3.5.4)."""
    if mode not in {crash.value for crash in api.CrashMode}:
        raise UserError(f"--mode must be process or power, got {mode!r}")
    options = api.CrashTestOptions(
        _options(engine, knob, settings, workdir, results, connection, workload, terminals=terminals,
                 warmup_s=warmup, duration_s=duration, seed=seed, rebuild=rebuild, transactions=transactions,
                 system_changes=allow_system_changes), api.CrashMode(mode), crashes)
    progress = CrashProgress(out)
    try:
        ids = api.crash_test(options, progress, LoadBars(out))
    finally:
        progress.stop()
    render_crash_tests(out, api.crash_tests(options.benchmark.results, ids=ids))
    out.print(f"Stored as crash test{'s' if len(ids) > 1 else ''} {ids[0]}{f'..{ids[-1]}' if len(ids) > 1 else ''}: "
              "`maximus crashtests` lists them again.")


@app.command()
def crashtests(experiment: Annotated[Optional[int], typer.Option("--experiment", help="Only this experiment's.")]
               = None, results: Results = None,
               export_format: Annotated[Optional[str], typer.Option("--export", metavar="FORMAT", help="Write them "
                                                                   "as json or csv instead of a table.")] = None,
               output: Annotated[Optional[Path], typer.Option("--output", "-o", help="With --export: the file to "
                                                              "write [default: stdout].")] = None) -> None:
    """List the stored crash tests, with each configuration's measured durability."""
    if export_format is not None:
        if export_format not in ("json", "csv"):
            raise UserError(f"--export must be json or csv, got {export_format!r}")
        text = api.export_crash_tests(results, experiment, None, export_format, output)
        if output is None:
            sys.stdout.write(text)
        return
    render_crash_tests(out, api.crash_tests(results, experiment))


@app.command("check")
@with_connection_options("text", "path")  # how to reach the server; a check changes nothing on it
@with_workload_options(chooses_database=True)
def check_command(engine: Engine = "sqlite", knob: Knobs = None, settings: Settings = None,
                  workdir: Workdir = None, connection: Connection = None, workload: WorkloadName = "tpcc") -> None:
    """Check the twelve consistency conditions of 3.3.2 on the database of the last run."""
    options = _options(engine, knob, settings, workdir, None, connection, workload)
    results = api.check(options, announce=out.print)
    view.render_consistency(out, results)
    failed = [r for r in results if r.passed is False]
    if failed:
        raise ConsistencyError(f"{len(failed)} consistency condition(s) failed: "
                               + ", ".join(r.clause for r in failed))


@app.command()
def runs(results: Results = None) -> None:
    """List the stored runs."""
    view.render_runs(out, api.list_runs(results))


@app.command()
def show(run_id: Annotated[int, typer.Argument(metavar="RUN", help="Run number, from `maximus runs`.")],
         histograms: Annotated[bool, typer.Option("--histograms", help="Also print response-time "
                                                  "histograms (5.6.1).")] = False,
         results: Results = None) -> None:
    """Print one stored run: figures, response times, validity, consistency, environment."""
    _show(api.report_of_run(results, run_id), histograms, environment=True, just_stored=False)


app.add_typer(experiment_app, name="experiment")
app.command("compare")(compare)
app.command("report")(report)
app.command("export")(export)
app.add_typer(system_app, name="system")


def _run_and_show(options: api.BenchmarkOptions) -> None:
    countdown = RunCountdown(out)
    try:
        outcome = api.run(options, countdown, LoadBars(out))
    finally:
        countdown.stop()
    run_id, status, errors, consistency = outcome.run_id, outcome.status, outcome.result.errors, outcome.consistency
    del outcome  # and the run's samples with it: `show` reads them back, and a long run's would add to its peak
    _show(api.report_of_run(options.results, run_id), histograms=False, environment=False)
    _exit_for(run_id, status, errors, consistency)


def _show(report: api.RunReport, histograms: bool, environment: bool, just_stored: bool = True) -> None:
    record, shown = report.record, report.presentation
    view.render_header(out, record, shown)
    view.render_figures(out, report.figures, shown)
    render_schedule(out, report.rate)
    view.render_timeline(out, report.figures, shown.headline)
    view.render_run_table(out, [api.run_column(report)], shown)
    render_client_hosts(out, record.environment)
    view.render_monitoring(out, report.monitoring)
    view.render_device(out, report.device)
    if histograms:
        view.render_histograms(out, report.figures, shown)
    view.render_bands(out, "Input validity (5.5.1.5)", report.validity)
    view.render_bands(out, "Mix (5.2.3: share of all transactions, %)", report.mix)
    if report.consistency:
        view.render_consistency(out, report.consistency)
    if environment:
        view.render_environment(out, record.environment)
    view.render_messages(out, "warning", report.warnings, "yellow")
    view.render_messages(out, "error", record.errors, "red")
    if just_stored:  # after a run, not when `maximus show` prints it again
        out.print(f"Stored as run {record.id}: `maximus show {record.id}` prints it again.")


def _exit_for(run_id: int, status: RunStatus, errors: Sequence[str], consistency: Sequence[api.CheckResult]) -> None:
    if status is RunStatus.INTERRUPTED:
        raise typer.Exit(130)
    if status is RunStatus.FAILED:
        raise EngineError(f"{cause(errors)} (run {run_id} is stored as failed: `maximus show {run_id}`)")
    failed = [r.clause for r in consistency if r.passed is False]
    if failed:
        raise ConsistencyError(f"consistency condition(s) failed after the run: {', '.join(failed)}")


def _fail(message: str) -> None:
    sys.stderr.write(f"error: {' '.join(message.split())}\n")


class _Notes(logging.Handler):
    """What the engines log for the user (a leftover server stopped, the user's server restarted): a line
    each, on the console the progress bars draw on, so they do not tear them."""

    def emit(self, record: logging.LogRecord) -> None:
        out.print(f"[yellow]note:[/] {escape(record.getMessage())}")


def _print_notes() -> None:
    logger = logging.getLogger("maximus")
    if not any(isinstance(handler, _Notes) for handler in logger.handlers):
        logger.addHandler(_Notes())
    logger.setLevel(logging.INFO)


def _noting_terminations() -> threading.Event:
    """SIGTERM (``kill``, ``timeout``, systemd, CI) is a Ctrl-C: it goes to whichever Ctrl-C handler is in
    place (a run's stops the run in order and keeps what it measured), so everything that stops in order at a
    Ctrl-C does at a SIGTERM. The event says that the command ends with code 143 instead of 130."""
    terminated = threading.Event()

    def terminate(signum: int, frame: Any) -> None:
        terminated.set()
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # Ctrl-C ignored or left to the system: a SIGTERM still ends the command, in order
            signal.default_int_handler(signal.SIGINT, frame)

    signal.signal(signal.SIGTERM, terminate)
    return terminated


def _restoring(arguments: list[str]) -> bool:
    return [word for word in arguments if not word.startswith("-")][:2] == ["system", "restore"]


def main() -> None:
    """Entry point: one-line errors with an exit code instead of tracebacks, and the engines' notes. Typer
    turns a KeyboardInterrupt into exit code 130 without a word, as it does a stopped run's ``Exit(130)``
    (after its results): either way the command says in one line that it was stopped."""
    _print_notes()
    terminated = _noting_terminations()
    try:
        if not _restoring(sys.argv[1:]):  # `system restore` puts back itself, and says what it put back
            api.recover_system()  # what a Maximus that did not finish left changed, put back before anything else
        code = app(standalone_mode=False)
    except TyperException as error:  # bad command line: typer's usage errors, one line
        _fail(error.format_message())
        code = error.exit_code
    except MaximusError as error:
        _fail(str(error))
        code = error.exit_code
    except Exit as exit_:
        code = exit_.exit_code
    except (KeyboardInterrupt, Abort):
        code = 130
    code = code if isinstance(code, int) else 0
    if code == 130:
        _fail("terminated" if terminated.is_set() else "interrupted")
    sys.exit(128 + signal.SIGTERM if code == 130 and terminated.is_set() else code)
