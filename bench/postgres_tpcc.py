"""PostgreSQL benchmark: the Maximus build and driver against the C tools, measured side by side in one run.

1. Build: Maximus builds N warehouses (generation + COPY streams + keys, indexes, ANALYZE) against the
   time to COPY the same rows, already generated into files on disk, into the same fresh schema with
   the same keys and indexes (target: ratio <= 1.3).
2. Run: New-Orders per minute of the Maximus driver (server-side mode: one PL/pgSQL call per transaction)
   against pgbench, a C client, calling the same functions with the same mix (target: ratio >= 0.95); and
   Maximus's client-side mode (its own statements) against its server-side mode (target: about 0.6) and
   against BenchBase's quoted client-side figure (target: 1.5 times); and Maximus's client-side mode against
   pgbench running the same client-side statements, each of Maximus's batches one \;-joined simple-protocol
   query, so the same round trips (target: ratio >= 0.9; see SCRIPT_NOTES). Client and server CPU seconds per
   1,000 transactions are printed for each; after each pgbench client-side run the consistency conditions
   (3.3.2) are checked, and a violation stops the bench.

Server configuration (the issue's): shared_buffers=2GB, max_wal_size=8GB, checkpoint_timeout=15min,
synchronous_commit=on, read committed; no keying or think times. Usage:

    .venv/bin/python bench/postgres_tpcc.py [--warehouses 4] [--duration 60] [--warmup 10] [--clients 4,8] [--pairs 4]
                                            [--build-repeats 3] [--build-only] [--quick | --smoke]

--smoke runs every step with the smallest sizes (1 warehouse, 2 builds so that each side goes first once, one round
of 1-s runs at 2 clients), in seconds: it checks that the script still works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import math
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from maximus import api
from maximus.engines import _process
from maximus.records import RunStatus
from maximus.samplers.os_linux import stat_readings
from maximus.samplers.processes import ProcessTree, children_of, pid_in_file
from maximus.workloads.tpcc import generate, schema
from maximus.workloads.tpcc.constants import DECK
from maximus.workloads.tpcc.random import NURandConstants
from maximus.workloads.tpcc.server_side import procedures_sql

SEED = 1  # the build's and the runs': Maximus's run draws NURand with the C of this seed's run (2.1.6.1)
KNOBS = {"shared_buffers": "2GB", "max_wal_size": "8GB", "checkpoint_timeout": "15min", "synchronous_commit": "on"}
NAMES = "ARRAY['BAR','OUGHT','ABLE','PRI','PRES','ESE','ANTI','CALLY','ATION','EING']"
# pgbench draws its scripts with these weights; Maximus deals the same 23-card deck (5.2.4.2), so both
# run 43.5 % New-Orders. With 45/43/4/4/4 pgbench ran 3.4 % more New-Orders than Maximus for the same work.
MIX = DECK
# The best peer's New-Orders/min on this machine (HammerDB 4.12, 4 warehouses, 120 s), quoted from the issue;
# the target is 1.5 times as many.
BEST_PEER = {4: 63_000, 8: 62_500}
# BenchBase's client-side SQL over JDBC on this machine at 8 clients, the best of its runs (29,210-31,178),
# quoted from the issue; Maximus's client-side mode's target is 1.5 times as many.
BENCHBASE_CLIENT_SIDE = {8: 31_178}
SMOKE_NOTICE = ("smoke mode: the smallest sizes and shortest runs, to check that the script works end to end; "
                "its figures mean nothing")
# What --quick and --smoke set, whatever else is given. The smoke's two builds put each side first once, and give
# the build's ratio an interval; its one round gives the runs' ratios none: both of _interval's ways are taken.
QUICK = {"warehouses": 1, "duration": 10.0, "warmup": 3.0, "clients": "4", "pairs": 1, "build_repeats": 1}
SMOKE = {"warehouses": 1, "duration": 1.0, "warmup": 1.0, "clients": "2", "pairs": 1, "build_repeats": 2}


def main() -> None:
    options = _arguments()
    workdir = Path(tempfile.mkdtemp(prefix="maximus-bench-pg-", dir="/var/tmp"))
    workdir.chmod(0o755)
    if options.smoke:
        print(SMOKE_NOTICE)
    try:
        engine = api.make_engine("postgres", workdir, api.Build.of("tpcc", {"warehouses": options.warehouses}), KNOBS)
        print(f"PostgreSQL {engine.version()} managed in {workdir}; knobs {KNOBS}; read committed; "
              f"{options.warehouses} warehouses; no keying/think times\n")
        with api.running(engine):
            _build(engine, options.warehouses, workdir, options.build_repeats)
        if not options.build_only:
            _runs(options, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouses", type=int, default=4)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--clients", default="4,8")
    parser.add_argument("--pairs", type=int, default=4,
                        help="rounds per client count (Maximus server-side, pgbench, Maximus client-side, pgbench "
                             "client-side; the order rotated: a multiple of 4 puts each first equally often)")
    parser.add_argument("--build-only", action="store_true", help="measure the build, skip the runs")
    parser.add_argument("--build-repeats", type=int, default=3, help="builds, each against a COPY from files")
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="1 warehouse, 10 s runs, 4 clients")
    sizes.add_argument("--smoke", action="store_true",
                       help="1 warehouse, 2 builds, 1 s runs at 2 clients: checks that the script works")
    options = parser.parse_args()
    if options.quick or options.smoke:
        vars(options).update(SMOKE if options.smoke else QUICK)
    options.client_counts = [int(c) for c in options.clients.split(",")]
    return options


def _interval(ratios: list[float], target: float, higher_is_better: bool, unit: str = "pairs") -> str:
    """The pairs' geometric-mean ratio with its 95 % interval (a t interval on the logs of the pair ratios,
    the pairs being the repeats), and where the target lies: one pair differs from the next by up to 15 %
    on this machine, so a median alone cannot tell a missed target from noise."""
    # Imported here, not at the top: the loader's processes are spawned, and each imports this script
    # again; analysis.compare brings scipy, 0.6 s of the timed build in every one of them.
    from maximus.analysis.compare import estimate

    logs = estimate([math.log(r) for r in ratios])
    mean = math.exp(logs.mean)
    if logs.n < 2:
        return f"geometric mean {mean:.3f} of one {unit[:-1]}: no interval"
    low, high = math.exp(logs.low), math.exp(logs.high)
    beyond, short = (low >= target, high < target) if higher_is_better else (high <= target, low > target)
    verdict = "the target is met" if beyond else "the target is missed" if short else "the target is within noise"
    return f"geometric mean {mean:.3f}, 95 % interval {low:.3f}-{high:.3f} over {logs.n} {unit}: {verdict}"


# -- build --------------------------------------------------------------------------------------------

def _build(engine, warehouses: int, workdir: Path, repeats: int) -> None:
    """Maximus's build and the COPY from files ``repeats`` times, alternating which goes first: this
    disk's flush time drifts from one minute to the next. Neither ends with a checkpoint: the Maximus
    build keeps the database it loaded as the pristine copy by renaming it, and the loaded data reaches
    the data files at the next checkpoint, as the baseline's does. Each side starts after the other's
    data is written and its own old databases are dropped, untimed (dropping one forces a checkpoint)."""
    files = _write_files(workdir / "copy-files", warehouses)
    print("1. Build")
    ratios, loader_ratios, seconds = [], [], []
    for attempt in range(1, repeats + 1):
        copy_first = attempt % 2 == 0  # alternate which goes first, as the runs do
        copy_s = _copy_from_files(engine, files) if copy_first else 0.0
        engine.destroy()
        _checkpoint(engine)
        started = time.perf_counter()
        result = api.load_database(engine, api.Build.of("tpcc", {"warehouses": warehouses}), seed=SEED)
        maximus_s = time.perf_counter() - started
        seconds.append(maximus_s)
        copy_s = copy_s if copy_first else _copy_from_files(engine, files)
        ratios.append(maximus_s / copy_s)
        loader_ratios.append(result.seconds / copy_s)
        print(f"  {attempt}: Maximus build (generate + COPY + keys + indexes + ANALYZE, kept as the pristine copy) "
              f"{maximus_s:5.1f} s, of which the loader {result.seconds:.1f} s; COPY of the same rows from files "
              f"+ keys + indexes + ANALYZE {copy_s:5.1f} s; ratio {ratios[-1]:.2f}")
    print(f"  ratio Maximus / COPY-from-files: median {statistics.median(ratios):.2f} of "
          f"{', '.join(f'{r:.2f}' for r in ratios)}  (target <= 1.3); the loader alone, without keeping the "
          f"pristine copy: median {statistics.median(loader_ratios):.2f}")
    print(f"  {_interval(ratios, 1.3, higher_is_better=False, unit='repeats')}")
    fastest = 42 / statistics.median(seconds) * warehouses / 4
    print(f"  peers (quoted from the issue): BenchBase 42 s, HammerDB 56 s, sysbench-tpcc 62 s, go-tpc 143 s "
          f"for 4 warehouses; Maximus's median build is {fastest:.1f}x the fastest per warehouse\n")


def _write_files(directory: Path, warehouses: int) -> dict[str, Path]:
    """The loader's rows, in COPY text format, one file per table (not timed)."""
    directory.mkdir()
    files = {table.name: directory / f"{table.name}.copy" for table in schema.TABLES}
    handles = {name: path.open("w") for name, path in files.items()}
    chunks = [generate.items(SEED)] + [generate.warehouse_chunks(SEED, w, 0, "2026-01-01 00:00:00")
                                    for w in range(1, warehouses + 1)]
    for group in chunks:
        for chunk in group:
            handles[chunk.table].writelines("\t".join(_text(v) for v in row) + "\n" for row in chunk.rows)
    for handle in handles.values():
        handle.close()
    _process.give_to_server_user(directory)
    return files


def _text(value: object) -> str:
    return "\\N" if value is None else str(value)


def _checkpoint(engine) -> None:
    with psycopg.connect(engine._dsn("postgres"), autocommit=True) as admin:
        admin.execute("CHECKPOINT")


def _copy_from_files(engine, files: dict[str, Path]) -> float:
    """The baseline, on the server the caller keeps running."""
    with psycopg.connect(engine._dsn("postgres"), autocommit=True) as admin:
        admin.execute('DROP DATABASE IF EXISTS "copy_baseline"')
        admin.execute('CREATE DATABASE "copy_baseline"')
        admin.execute("CHECKPOINT")
    with psycopg.connect(engine._dsn("copy_baseline"), autocommit=True) as db:
        started = time.perf_counter()
        for statement in schema.schema_statements(engine.dialect):
            db.execute(statement)
        for table, path in files.items():
            db.execute(f"COPY {table} FROM '{path}'")
        for statement in schema.index_statements(engine.dialect) + ["ANALYZE"]:
            db.execute(statement)
        return time.perf_counter() - started


# -- runs ---------------------------------------------------------------------------------------------

def _runs(options: argparse.Namespace, workdir: Path) -> None:
    print("2. Runs (same functions, same mix: the 23-card deck, 10/10/1/1/1)")
    print(f"  {options.pairs} rounds per client count of Maximus server-side, pgbench, Maximus client-side and pgbench")
    print("  client-side, the order rotated; on a shared virtual disk one run's throughput can differ from the next by")
    print("  15 %, so each ratio is taken within a round, and reported as a geometric mean with its 95 % interval")
    build = api.Build.of("tpcc", {"warehouses": options.warehouses})
    pump = api.make_engine("postgres", workdir, build, KNOBS).call_pump()
    print(textwrap.fill(SCRIPT_NOTES, 116, initial_indent="  ", subsequent_indent="  "))
    print(f"  Maximus's terminals send their calls with {type(pump).__name__} "
          f"({'in C over libpq' if type(pump).__name__ == 'LibpqPump' else 'in Python: the C extension is not built'})")
    print(f"  {'client':<21}{'clients':>8}{'pair':>5}{'NO/min':>10}{'TPS':>9}{'client CPU s/1,000 txn':>24}"
          f"{'server CPU s/1,000 txn':>24}{'switches/txn':>14}")
    for clients in options.client_counts:
        rounds = [_round(options, workdir, clients, number) for number in range(options.pairs)]
        _ratios(clients, rounds, options.warehouses)
    print("  peers (quoted from the issue, 4/8 clients): HammerDB ~63,000/62,500, BenchBase 45,800/52,600, "
          "go-tpc 45,300/46,100 New-Orders/min; BenchBase client-side at 8 clients 29,210-31,178")


def _round(options: argparse.Namespace, workdir: Path, clients: int, number: int) -> dict[str, dict[str, float]]:
    """One run of each, the order rotated from one round to the next: the machine drifts within a round too."""
    runs = {"Maximus server-side": lambda: _maximus_run(options, workdir, clients, "server"),
            "pgbench": lambda: _pgbench_run(options, workdir, clients),
            "Maximus client-side": lambda: _maximus_run(options, workdir, clients, "client"),
            "pgbench client-side": lambda: _pgbench_run(options, workdir, clients, client_side=True)}
    names = list(runs)[number % len(runs):] + list(runs)[:number % len(runs)]
    figures = {name: runs[name]() for name in names}
    for name in runs:
        row = figures[name]
        print(f"  {name:<21}{clients:>8}{number + 1:>5}{row['no_per_min']:>10,.0f}{row['tps']:>9,.0f}"
              f"{row['client_ms']:>24.3f}{row['server_ms']:>24.3f}{row['switches']:>14.2f}")
    return figures


def _ratios(clients: int, rounds: list[dict[str, dict[str, float]]], warehouses: int) -> None:
    rate = lambda name: [r[name]["no_per_min"] for r in rounds]  # noqa: E731
    server, pgbench, client = rate("Maximus server-side"), rate("pgbench"), rate("Maximus client-side")
    ratios = [m / p for m, p in zip(server, pgbench)]
    print(f"  ratio Maximus / pgbench New-Orders/min at {clients} clients: median {statistics.median(ratios):.2f} "
          f"of {', '.join(f'{r:.2f}' for r in ratios)}  (target >= 0.95)")
    print(f"  {_interval(ratios, 0.95, higher_is_better=True, unit='rounds')}")
    modes = [c / s for c, s in zip(client, server)]
    print(f"  ratio client-side / server-side Maximus at {clients} clients: median {statistics.median(modes):.2f} of "
          f"{', '.join(f'{r:.2f}' for r in modes)}  (target about 0.6); "
          f"{_interval(modes, 0.6, higher_is_better=True, unit='rounds')}")
    own = [c / p for c, p in zip(client, rate("pgbench client-side"))]
    print(f"  ratio Maximus client-side / pgbench client-side New-Orders/min at {clients} clients: median "
          f"{statistics.median(own):.2f} of {', '.join(f'{r:.2f}' for r in own)}  (target >= 0.9); "
          f"{_interval(own, 0.9, higher_is_better=True, unit='rounds')}")
    if clients in BEST_PEER and warehouses == 4:
        best = BEST_PEER[clients]
        print(f"  Maximus at {clients} clients: median {statistics.median(server):,.0f} New-Orders/min, "
              f"{statistics.median(server) / best:.2f}x the best peer's {best:,} (target >= 1.5x, {1.5 * best:,.0f})")
    if clients in BENCHBASE_CLIENT_SIDE and warehouses == 4:
        benchbase = BENCHBASE_CLIENT_SIDE[clients]
        print(f"  Maximus client-side at {clients} clients: median {statistics.median(client):,.0f} New-Orders/min, "
              f"{statistics.median(client) / benchbase:.2f}x BenchBase's {benchbase:,} (target >= 1.5x, "
              f"{1.5 * benchbase:,.0f})")


def _maximus_run(options: argparse.Namespace, workdir: Path, clients: int, transactions: str) -> dict[str, float]:
    """CPU from the run's own monitor over the measured window: the terminals' steady cost, not their start-up."""
    run_options = api.BenchmarkOptions(engine="postgres", knobs=KNOBS, settings={"warehouses": options.warehouses},
                                       terminals=clients, warmup_s=options.warmup, duration_s=options.duration,
                                       workdir=workdir, results=workdir / "results.db", check=False, seed=SEED,
                                       transactions=transactions, monitor=True)
    outcome = api.run_benchmark(run_options)
    if outcome.status is not RunStatus.COMPLETE:  # interrupted (Ctrl-C) or failed: nothing to compare, stop here
        raise SystemExit(f"Maximus's run {outcome.run_id} {outcome.status.value}: "
                         f"{'; '.join(outcome.result.errors) or 'no error reported'}")
    store = api.open_results(workdir / "results.db")
    report = api.analyse_run(store, outcome.run_id)
    store.close()
    figures, groups = report.figures, report.monitoring.figures.groups
    if not figures.tpm:  # nothing to compare: say why instead of dividing by zero
        raise SystemExit(f"Maximus's run {outcome.run_id} ({outcome.status}) completed no transaction in its "
                         f"measured window: {'; '.join(outcome.result.errors) or 'no error reported'}")
    per_transaction_s = 60 / figures.tpm
    client_cpus = groups["client"].cpus + (groups["driver"].cpus if "driver" in groups else 0.0)
    switches_per_s = report.monitoring.figures.context_switches_per_s or float("nan")
    return {"no_per_min": figures.headline, "tps": figures.tpm / 60,
            "client_ms": 1000 * client_cpus * per_transaction_s,
            "server_ms": 1000 * groups["server"].cpus * per_transaction_s,
            "switches": switches_per_s * per_transaction_s}


def _context_switches() -> int:
    """The machine's context switches since boot, read by the monitor's own parser of /proc/stat."""
    return next(r.value for r in stat_readings(Path("/proc/stat").read_text()) if r.name == "context_switches_total")


def _is_client_backend(pid: int) -> bool:
    try:
        title = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    # "postgres: user db [local] idle" over the Unix socket, "... 127.0.0.1(port) idle" over TCP
    return re.search(r"\(\d+\)|\[local\]", title) is not None


def _server_cpu(server: ProcessTree) -> float:
    """The server's CPU seconds so far, as the monitor reads them for Maximus, once the client backends
    have gone (5 s at most): a backend still exiting may be reaped between the reading's two parts, its
    postmaster's and its children's, and then counts in neither."""
    deadline = time.monotonic() + 5.0
    while any(_is_client_backend(pid) for pid in children_of(server.root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return sum(r.value for r in server.read() if r.name == "process_cpu_seconds_total")


def _cpu(after: resource.struct_rusage, before: resource.struct_rusage) -> float:
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _pgbench_run(options: argparse.Namespace, workdir: Path, clients: int,
                 client_side: bool = False) -> dict[str, float]:
    """A warm-up invocation as long as Maximus's warm-up, then the measured one, like Maximus's window. The
    function scripts (``client_side`` false) run prepared; the client-side ones in the simple protocol, each of
    Maximus's batches one query (SCRIPT_NOTES), their run followed by the consistency check (3.3.2)."""
    engine = api.make_engine("postgres", workdir, api.Build.of("tpcc", {"warehouses": options.warehouses}), KNOBS)
    if client_side:
        scripts, new_orders = _pgbench_client_scripts(workdir / "pgbench-client-side", options.warehouses)
    else:
        functions = _pgbench_scripts(workdir / "pgbench", options.warehouses)
        scripts, new_orders = [(functions[name], weight) for name, weight in MIX.items()], 1
    protocol = "simple" if client_side else "prepared"
    with api.running(engine):
        engine.restore()
        if options.warmup >= 1:
            _pgbench(engine, scripts, clients, options.warmup, protocol)
        server = ProcessTree(pid_in_file(engine.server.data_dir / "postmaster.pid"), with_io=False)
        server_before = _server_cpu(server)
        before, switches_before = resource.getrusage(resource.RUSAGE_CHILDREN), _context_switches()
        output = _pgbench(engine, scripts, clients, options.duration, protocol)
        client_s = _cpu(resource.getrusage(resource.RUSAGE_CHILDREN), before)
        switches = _context_switches() - switches_before
        server_s = _server_cpu(server) - server_before
        if client_side:
            _check(engine, options.warehouses)
    tps = float(re.search(r"tps = ([\d.]+)", output).group(1))
    per_script = [float(t) for t in re.findall(r"\d+ transactions \([\d.]+% of total, tps = ([\d.]+)\)", output)]
    transactions = int(re.search(r"number of transactions actually processed: (\d+)", output).group(1))
    return {"no_per_min": sum(per_script[:new_orders]) * 60, "tps": tps,
            "client_ms": 1000 * client_s / transactions, "server_ms": 1000 * server_s / transactions,
            "switches": switches / transactions}


def _check(engine, warehouses: int) -> None:
    """TPC-C's consistency conditions (3.3.2) on the database as pgbench left it, as ``maximus check`` checks it:
    a script that wrote the wrong rows stops the bench here."""
    from maximus.database import check_running

    failed = [r for r in check_running(engine, api.Build.of("tpcc", {"warehouses": warehouses}).workload,
                                                 fresh=False) if r.passed is False]
    if failed:
        raise SystemExit("pgbench client-side left the database inconsistent: " +
                         "; ".join(f"{r.clause} {r.description}: {r.detail}" for r in failed))


def _pgbench(engine, scripts: list[tuple[Path, int]], clients: int, seconds: float, protocol: str) -> str:
    """pgbench connects the way Maximus's terminals do: to the managed server's Unix-domain socket."""
    host = conninfo_to_dict(engine._dsn(engine.database))["host"]
    command = ["pgbench", "-h", host, "-p", str(engine.server.port), "-U", "postgres", "-n", "-M", protocol,
               "-c", str(clients), "-j", str(min(clients, 2)), "-T", str(max(1, int(seconds))),
               "--max-tries", "10",  # deadlocks (between remote order lines, or a New-Order's stock rows read one by
               # one in line order) are retried, as Maximus retries them
               *[f"-f{path}@{weight}" for path, weight in scripts], engine.database]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pgbench failed: {done.stderr.strip()[-600:]}")
    return done.stdout


def _pgbench_scripts(directory: Path, warehouses: int) -> dict[str, Path]:
    """The TPC-C mix as pgbench scripts calling the same functions with Maximus's inputs: the client's
    home warehouse and district as Maximus deals them, NURand, and with more than one warehouse the
    remote rules (2.5.1.2: 15 % of payments for a customer of another warehouse; 2.4.1.5: 1 % of order
    lines supplied by another warehouse). NURand's C are those of Maximus's run: C_LAST's decides how
    many customers a by-name lookup finds (3.7 on average with the run's 149 against the load's 77, 2.4
    with 223). Only the 1 % New-Order rollback is missing: pgbench would abort the client on its error."""
    directory.mkdir(exist_ok=True)
    draws = _draws(warehouses)
    home, c_id, last, payer = draws["home"], draws["c_id"], draws["last"], draws["payer"]
    name = draws["name"] + ("\\set by_name random(1, 100)\n"
                            "\\set c_or_null case when :by_name <= 60 then -1 else :c_id end\n")
    customer = "NULLIF(:c_or_null::int, -1)"
    items = "".join(draws["item"](k) for k in range(1, 16))
    arrays = [f"(ARRAY[{', '.join(f':{p}{k}::int' for k in range(1, 16))}])[1:(:ol_cnt::int)]"
              for p in ("i", "s", "q")]
    scripts = {
        "new_order": home + c_id + "\\set ol_cnt random(5, 15)\n" + items +
        f"SELECT * FROM tpcc_new_order(:w_id::int, :d_id::int, :c_id::int, {arrays[0]}, {arrays[1]}, {arrays[2]}, "
        "localtimestamp);\n",
        "payment": home + c_id + name + payer + "\\set amount random(100, 500000)\n" +
        f"SELECT * FROM tpcc_payment(:w_id::int, :d_id::int, :c_w_id::int, :c_d_id::int, {customer}, {last}, "
        ":amount::int / 100.0, localtimestamp);\n",
        "order_status": home + c_id + name +
        f"SELECT * FROM tpcc_order_status(:w_id::int, :d_id::int, {customer}, {last});\n",
        "delivery": home + "\\set carrier random(1, 10)\n"
        "SELECT tpcc_delivery(:w_id::int, :carrier::int, localtimestamp);\n",
        "stock_level": home + "\\set threshold random(10, 20)\n"
        f"\\set home_d :client_id / {warehouses} % 10 + 1\n"
        "SELECT tpcc_stock_level(:w_id::int, :home_d::int, :threshold::int);\n",
    }
    paths = {}
    for script, text in scripts.items():
        paths[script] = directory / f"{script}.sql"
        paths[script].write_text(text)
    return paths


def _draws(warehouses: int) -> dict:
    """The scripts' inputs, drawn as Maximus draws them (see ``_pgbench_scripts``): pieces of pgbench script,
    ``last`` the SQL expression of the drawn last name, ``item`` line k's item, quantity and supply warehouse."""
    c = NURandConstants.for_run(NURandConstants.for_load(SEED).c_last, SEED)
    remote = warehouses > 1
    other = f"(:w_id + random(0, {warehouses - 2})) % {warehouses} + 1" if remote else ":w_id"
    return {
        "home": f"\\set w_id :client_id % {warehouses} + 1\n\\set d_id random(1, 10)\n",
        "c_id": f"\\set c_id (((random(0, 1023) | random(1, 3000)) + {c.c_id}) % 3000) + 1\n",
        "name": (f"\\set n (((random(0, 255) | random(0, 999)) + {c.c_last}) % 1000)\n"
                 "\\set n1 :n / 100 + 1\n\\set n2 :n / 10 % 10 + 1\n\\set n3 :n % 10 + 1\n"),
        "last": f"({NAMES})[:n1::int] || ({NAMES})[:n2::int] || ({NAMES})[:n3::int]",
        "item": lambda k: (f"\\set i{k} (((random(0, 8191) | random(1, 100000)) + {c.ol_i_id}) % 100000) + 1\n"
                           f"\\set q{k} random(1, 10)\n"
                           f"\\set s{k} case when random(1, 100) <= {1 if remote else 0} then {other} "
                           "else :w_id end\n"),
        "payer": (f"\\set remote random(1, 100)\n"
                  f"\\set c_w_id case when :remote <= {15 if remote else 0} then {other} else :w_id end\n"
                  f"\\set c_d_id case when :remote <= {15 if remote else 0} then random(1, 10) else :d_id end\n"),
    }


# -- pgbench client-side ------------------------------------------------------------------------------
# Maximus's client-side transactions as pgbench scripts: the statements of workloads/tpcc/{new_order,payment,
# order_status,delivery,stock_level}.py, their texts taken from those classes with each ? bound to a pgbench
# variable, and each of Maximus's batches (one libpq pipeline, one round trip) sent as one simple-protocol query
# of statements joined by \; whose rows \aset captures: the same round trips per transaction as Maximus. What
# pgbench cannot do is done as close as it allows, and said in SCRIPT_NOTES.
SCRIPT_NOTES = (
    "pgbench client-side: Maximus's client-side statements, each Maximus batch one simple-protocol query of "
    "statements joined by \\; (one round trip, as Maximus's pipeline), so the same round trips per transaction; "
    "simple protocol, so the server parses and plans every statement where Maximus's are prepared. pgbench keeps "
    "one row per query, so a New-Order reads each line's item and stock row with a statement of its own (in the "
    "same round trip), and a by-name lookup takes its middle customer with a LIMIT of half the count; a Payment's "
    "customer read also returns c_credit = 'BC' (pgbench compares no strings), the last name is built by the "
    "server from NURand's syllables as the function scripts build it, Delivery's ten districts are unrolled, and "
    "the brand-generic flag and the 1 % New-Order rollback are left out (pgbench would abort the client on its "
    "error)")


def _bind(sql: str, *names: str) -> str:
    """``sql`` with its ? placeholders, in order, replaced by ``names`` (pgbench variables or SQL text)."""
    parts = sql.split("?")
    assert len(parts) == len(names) + 1, (sql, names)
    return "".join(part + name for part, name in zip(parts, names)) + parts[-1]


def _query(statements: list[str], capture: bool = True) -> str:
    """One round trip: the statements joined by \\; in one simple-protocol query, their rows' columns \\aset."""
    return " \\;\n".join(statements) + (" \\aset\n" if capture else ";\n")


def _middle(by_name_sql: str, w: str, d: str, last: str) -> str:
    """Maximus's by-name lookup cut after its middle customer (2.5.2.2: the one at ceil(n/2) in C_FIRST order):
    the last row of the result, the one pgbench keeps."""
    return _bind(by_name_sql + " LIMIT (SELECT (COUNT(*) + 1) / 2 FROM customer WHERE c_w_id = ? AND c_d_id = ? "
                 "AND c_last = ?)", w, d, last, w, d, last)


def _matches(k: int, j: int) -> str:
    return f"(:i{k} = :i{j} and :s{k} = :s{j})"


def _new_order_script(lines: int, dialect, heading: str) -> str:
    """A New-Order of ``lines`` lines: Maximus's two batches. Each line's stock quantity is taken from what an
    earlier line of the same item and warehouse left (2.4.2.2), and the restock's rows are one per stock row, as
    Maximus aggregates them: a repeated line's row keyed by item 0, which matches no stock row."""
    from maximus.workloads.tpcc.new_order import NEXT_ORDER, QUEUED, NewOrder

    order = NewOrder(dialect)
    ks = range(1, lines + 1)
    text = heading + "\\set dd0 :d_id / 10\n\\set dd1 :d_id % 10\n"
    reads = [f"BEGIN \\;\n{_bind(order.customer_sql, ':w_id', ':d_id', ':c_id')}",
             _bind(order.district_sql, ":w_id", ":d_id")]
    reads += [f"SELECT i_price AS i_price_{k}, i_name AS i_name_{k}, i_data AS i_data_{k} FROM item "
              f"WHERE i_id = :i{k}" for k in ks]
    reads += [f"SELECT s_quantity AS s_quantity_{k}, s_data AS s_data_{k}, s_dist_:dd0:dd1 AS s_dist_{k} FROM stock "
              f"WHERE s_i_id = :i{k} AND s_w_id = :s{k}{dialect.for_update}" for k in ks]
    text += _query(reads)
    text += "\\set next_o_id :d_next_o_id + 1\n"
    for k in ks:
        earlier = " ".join(f"when {_matches(k, j)} then :left_{j}" for j in range(k - 1, 0, -1))
        text += (f"\\set base_{k} case {earlier} else :s_quantity_{k} end\n" if earlier else
                 f"\\set base_{k} :s_quantity_{k}\n")
        text += (f"\\set left_{k} case when :base_{k} >= :q{k} + 10 then :base_{k} - :q{k} "
                 f"else :base_{k} - :q{k} + 91 end\n\\set amount_{k} :q{k} * :i_price_{k}\n")
    for k in ks:
        later = range(lines, k, -1)
        repeated = " or ".join(_matches(k, j) for j in range(1, k))
        text += f"\\set key_{k} case when {repeated} then 0 else :i{k} end\n" if repeated else f"\\set key_{k} :i{k}\n"
        final = " ".join(f"when {_matches(j, k)} then :left_{j}" for j in later)
        text += f"\\set final_{k} case {final} else :left_{k} end\n" if final else f"\\set final_{k} :left_{k}\n"
        text += f"\\set ytd_{k} :q{k}" + "".join(f" + case when {_matches(j, k)} then :q{j} else 0 end"
                                                 for j in later) + "\n"
        text += f"\\set cnt_{k} 1" + "".join(f" + case when {_matches(j, k)} then 1 else 0 end" for j in later) + "\n"
        text += f"\\set remote_{k} case when :s{k} <> :w_id then :cnt_{k} else 0 end\n"
    text += f"\\set all_local case when {' and '.join(f':s{k} = :w_id' for k in ks)} then 1 else 0 end\n"
    text += (f"\\set total ({' + '.join(f':amount_{k}' for k in ks)}) * (1 - :c_discount) * "
             "(1 + :w_tax + :d_tax)\n")  # the screen's total, as Maximus computes it
    writes = [f"{_bind(NEXT_ORDER, ':next_o_id', ':w_id', ':d_id')}",
              _bind(order.order_sql, ":d_next_o_id", ":d_id", ":w_id", ":c_id", str(lines), ":all_local"),
              _bind(QUEUED, ":d_next_o_id", ":d_id", ":w_id"),
              _bind(order.rows_sql("restock", 0, lines),
                    *[f":{v}_{k}" if v != "s" else f":s{k}" for k in ks
                      for v in ("key", "s", "final", "ytd", "cnt", "remote")]),
              _bind(order.rows_sql("lines", 0, lines),
                    *[v for k in ks for v in (":d_next_o_id", ":d_id", ":w_id", str(k), f":i{k}", f":s{k}", f":q{k}",
                                              f":amount_{k}", f"':s_dist_{k}'")]),
              "COMMIT"]
    return text + _query(writes)


def _pgbench_client_scripts(directory: Path, warehouses: int) -> tuple[list[tuple[Path, int]], int]:
    """The client-side mix as pgbench scripts with their weights, and how many of them (the first) are New-Orders:
    one New-Order script per line count (5..15, drawn uniformly as 2.4.1.3 draws it), one Payment and one
    Order-Status per way of finding the customer (60 % by name), weighted so that the mix is the 23-card deck's."""
    from maximus.engines.postgres.sessions import _SNAPSHOT_BEGIN
    from maximus.workloads.tpcc import delivery as dl, order_status as os_, payment as pm, stock_level as sl
    from maximus.workloads.tpcc.constants import BY_NAME_PERCENT, MAX_ORDER_LINES, MIN_ORDER_LINES
    from maximus.workloads.tpcc.transaction import by_name

    dialect = api.make_engine("postgres", directory.parent, api.Build.of("tpcc", {"warehouses": warehouses}),
                              KNOBS).dialect
    directory.mkdir(exist_ok=True)
    draws = _draws(warehouses)
    counts = range(MIN_ORDER_LINES, MAX_ORDER_LINES + 1)
    unit = len(counts) * 5
    scripts: list[tuple[str, str, int]] = []
    for lines in counts:
        heading = draws["home"] + draws["c_id"] + "".join(draws["item"](k) for k in range(1, lines + 1))
        scripts.append((f"new_order_{lines}", _new_order_script(lines, dialect, heading),
                        MIX["new_order"] * unit // len(counts)))
    payment = pm.Payment(dialect)
    paying = draws["home"] + draws["payer"] + "\\set amount random(100, 500000)\n\\set paid :amount / 100.0\n"
    customer = payment.customer_sql.replace(" c_credit,", " c_credit, c_credit = 'BC' AS bad_credit,", 1)
    first = [f"BEGIN \\;\n{_bind(payment.sql['warehouse'], ':paid', ':w_id')}",
             _bind(payment.sql["district"], ":paid", ":w_id", ":d_id")]
    read = _bind(customer, ":c_w_id", ":c_d_id", ":c_id")
    entry = "':c_id :c_d_id :c_w_id :d_id :w_id :paid '"
    key = (":c_w_id", ":c_d_id", ":c_id")
    pay = ("\\if :bad_credit\n" + _query([_bind(payment.sql["pay_bad_credit"], ":paid", ":paid", entry, *key),
                                          "HISTORY", "COMMIT"]) +
           "\\else\n" + _query([_bind(pm.GOOD_CREDIT_PAYS, ":paid", ":paid", *key), "HISTORY", "COMMIT"]) + "\\endif\n")
    pay = pay.replace("HISTORY", _bind(payment.history_sql, ":c_id", ":c_d_id", ":c_w_id", ":d_id", ":w_id", ":paid",
                                       "':w_name    :d_name'"))
    by_name_share = lambda weight: weight * unit * BY_NAME_PERCENT // 100  # noqa: E731
    scripts.append(("payment_by_name", paying + draws["name"] + _query(
        first + [_middle(by_name("c_id"), ":c_w_id", ":c_d_id", draws["last"])]) + _query([read]) + pay,
        by_name_share(MIX["payment"])))
    scripts.append(("payment_by_id", paying + draws["c_id"] + _query(first + [read]) + pay,
                    MIX["payment"] * unit - by_name_share(MIX["payment"])))
    status = draws["home"]
    latest = [_bind(os_.LATEST_ORDER, ":w_id", ":d_id", ":c_id"),
              _bind(os_.LATEST_LINES, ":w_id", ":d_id", ":w_id", ":d_id", ":c_id"), "COMMIT"]
    scripts.append(("order_status_by_name", status + draws["name"] + _query(
        [f"{_SNAPSHOT_BEGIN} \\;\n{_middle(by_name(os_.CUSTOMER), ':w_id', ':d_id', draws['last'])}"]) +
        _query(latest), by_name_share(MIX["order_status"])))
    scripts.append(("order_status_by_id", status + draws["c_id"] + _query(
        [_SNAPSHOT_BEGIN, _bind(os_.CUSTOMER_BY_ID, ":w_id", ":d_id", ":c_id")] + latest),
        MIX["order_status"] * unit - by_name_share(MIX["order_status"])))
    delivery = dl.Delivery(dialect)
    districts = range(1, 11)
    text = draws["home"] + "\\set carrier random(1, 10)\n" + "".join(f"\\set no_o_id_{d} 0\n" for d in districts)
    text += _query(["BEGIN"] + [_bind(delivery.oldest_sql.replace("SELECT no_o_id", f"SELECT no_o_id AS no_o_id_{d}"),
                                      ":w_id", str(d)) for d in districts])
    text += _query([_bind(statement, *params) for d in districts for statement, params in (
        (dl.DELIVERED, (":w_id", str(d), f":no_o_id_{d}")),
        (delivery.sql["carrier"].replace("RETURNING o_c_id", f"RETURNING o_c_id AS o_c_id_{d}"),
         (":carrier", ":w_id", str(d), f":no_o_id_{d}")),
        (delivery.lines_sql, (":w_id", str(d), f":no_o_id_{d}")),
        (dl.AMOUNT.replace("SUM(ol_amount)", f"SUM(ol_amount) AS amount_{d}"), (":w_id", str(d), f":no_o_id_{d}")))])
    text += "".join(f"\\set paid_{d} case when :no_o_id_{d} > 0 then :amount_{d} else 0 end\n"
                    f"\\set customer_{d} case when :no_o_id_{d} > 0 then :o_c_id_{d} else 0 end\n" for d in districts)
    text += _query([_bind(dl.PAID, f":paid_{d}", ":w_id", str(d), f":customer_{d}") for d in districts] + ["COMMIT"],
                   capture=False)
    scripts.append(("delivery", text, MIX["delivery"] * unit))
    scripts.append(("stock_level", draws["home"] + "\\set threshold random(10, 20)\n"
                    f"\\set home_d :client_id / {warehouses} % 10 + 1\n" +
                    _query(["BEGIN", _bind(sl.LOW_STOCK, ":w_id", ":home_d", ":threshold"), "COMMIT"]),
                    MIX["stock_level"] * unit))
    weighted = []
    for name, text, weight in scripts:
        path = directory / f"{name}.sql"
        path.write_text(text)
        weighted.append((path, weight))
    return weighted, len(counts)


if __name__ == "__main__":
    assert procedures_sql  # the functions both clients call are the loader's (sql/postgres.sql)
    main()
