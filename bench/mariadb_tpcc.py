"""MariaDB benchmark: the Maximus build and driver against C tools, measured side by side in one run.

1. Build: Maximus builds N warehouses (generation + LOAD DATA streams + indexes + ANALYZE, then the pristine copy)
   against LOAD DATA of the same rows, already generated into files on disk, into the same fresh schema with
   the same keys and indexes (target: ratio <= 1.3).
2. Run: New-Orders per minute of the Maximus driver (server-side mode: one stored-function call per transaction)
   against sysbench, a C client, running a Lua script of ours (bench/mariadb_tpcc.lua) that calls the same
   functions with the same mix (target: ratio >= 0.95), and Maximus's client-side mode against its server-side
   mode; and Maximus's client-side mode against sysbench running the same client-side statements
   (bench/mariadb_tpcc_client.lua: the statements the C profiles send, their texts written by this script from the
   workload's own SQL, each of Maximus's batches one multi-statement query, so the same round trips; target: ratio
   >= 0.9; see CLIENT_SIDE_NOTES). New-Orders are counted by the database for every client (D_NEXT_O_ID moves once
   per committed New-Order). Client and server CPU seconds per 1,000 transactions are printed for each; after each
   sysbench client-side run the consistency conditions (3.3.2) are checked, and a violation stops the bench.

Server configuration: the managed server's defaults with innodb_buffer_pool_size=1G, innodb_log_file_size=1G,
innodb_flush_log_at_trx_commit=1 (durable), repeatable read; no keying or think times. Usage:

    .venv/bin/python bench/mariadb_tpcc.py [--warehouses 4] [--duration 60] [--warmup 10] [--clients 8] [--pairs 4]
                                           [--build-repeats 3] [--build-only] [--quick | --smoke]

--smoke runs every step with the smallest sizes (1 warehouse, 2 builds so that each side goes first once, one round
of 1-s runs at 2 clients), in seconds: it checks that the script still works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import math
import resource
import shutil
import statistics
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

from maximus import api
from maximus.engines._copy_text import copy_text
from maximus.records import RunStatus
from maximus.samplers.processes import ProcessTree
from maximus.workloads.tpcc import generate, loader, schema
from maximus.workloads.tpcc.sql import statements
from maximus.workloads.tpcc.random import NURandConstants

SEED = 1
KNOBS = {"innodb_buffer_pool_size": "1G", "innodb_log_file_size": "1G", "innodb_flush_log_at_trx_commit": "1"}
LUA = Path(__file__).resolve().parent / "mariadb_tpcc.lua"
CLIENT_SIDE_LUA = Path(__file__).resolve().parent / "mariadb_tpcc_client.lua"
CLIENT_SIDE_NOTES = (
    "sysbench client-side: Maximus's client-side statements as its C profiles send them (_profiles.c over "
    "_profiles_mariadb.h), their texts taken from the workload (native.statement_texts, NewOrder.rows_sql), each "
    "batch one multi-statement query with BEGIN and COMMIT, so the same round trips per transaction, and the same "
    "logic between batches (the 1 % New-Order rolled back, 60 % of customers by name, Delivery's empty districts "
    "skipped, conflicts retried). sysbench 1.0's SQL API reads only a query's first result, so the script drives "
    "the libmariadb sysbench links through LuaJIT's FFI on a connection of its own; its Delivery runs in the "
    "terminal's thread, where Maximus defers it to a worker process")
IGNORED = "1644,1213,1205"  # New-Order's unused item (MX001), deadlocks and lock wait timeouts: sysbench goes on
SMOKE_NOTICE = ("smoke mode: the smallest sizes and shortest runs, to check that the script works end to end; "
                "its figures mean nothing")
# What --quick and --smoke set, whatever else is given. The smoke's two builds put each side first once, and give
# the build's ratio an interval; its one round gives the runs' ratio none: both of _interval's ways are taken.
QUICK = {"warehouses": 1, "duration": 10.0, "warmup": 3.0, "clients": "4", "pairs": 1, "build_repeats": 1}
SMOKE = {"warehouses": 1, "duration": 1.0, "warmup": 1.0, "clients": "2", "pairs": 1, "build_repeats": 2}


def main() -> None:
    options = _arguments()
    workdir = Path(tempfile.mkdtemp(prefix="maximus-bench-mariadb-", dir="/var/tmp"))
    workdir.chmod(0o755)
    if options.smoke:
        print(SMOKE_NOTICE)
    try:
        build = api.Build.of("tpcc", {"warehouses": options.warehouses})
        engine = api.make_engine("mariadb", workdir, build, KNOBS)
        with api.running(engine):
            print(f"MariaDB {engine.version()} managed in {workdir}; knobs {KNOBS}; "
                  f"{engine.isolation(False, True)}; {options.warehouses} warehouses; no keying/think times")
            _build(engine, build, workdir, options.build_repeats)
            engine.restore()
            session = engine.connect()
            print("server configuration: " + " ".join(f"{k}={v}" for k, v in engine.reported_settings(session).items())
                  + "\n")
            session.close()
        if not options.build_only:
            _runs(options, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouses", type=int, default=4)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--clients", default="8")
    parser.add_argument("--pairs", type=int, default=4,
                        help="rounds per client count (Maximus server-side, sysbench, Maximus client-side, sysbench "
                             "client-side; the order rotated: a multiple of 4 puts each first equally often)")
    parser.add_argument("--build-only", action="store_true", help="measure the build, skip the runs")
    parser.add_argument("--build-repeats", type=int, default=3, help="builds, each against LOAD DATA from files")
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="1 warehouse, 10 s runs, 4 clients")
    sizes.add_argument("--smoke", action="store_true",
                       help="1 warehouse, 2 builds, 1 s runs at 2 clients: checks that the script works")
    options = parser.parse_args()
    if options.quick or options.smoke:
        vars(options).update(SMOKE if options.smoke else QUICK)
    options.client_counts = [int(c) for c in options.clients.split(",")]
    return options


def _interval(ratios: list[float], target: float, higher_is_better: bool, unit: str) -> str:
    """The geometric-mean ratio with its 95 % interval, and where the target lies (as bench/postgres_tpcc.py)."""
    from maximus.analysis.compare import estimate  # here: the spawned loader processes import this script again

    logs = estimate([math.log(r) for r in ratios])
    mean = math.exp(logs.mean)
    if logs.n < 2:
        return f"geometric mean {mean:.3f} of one {unit[:-1]}: no interval"
    low, high = math.exp(logs.low), math.exp(logs.high)
    beyond, short = (low >= target, high < target) if higher_is_better else (high <= target, low > target)
    verdict = "the target is met" if beyond else "the target is missed" if short else "the target is within noise"
    return f"geometric mean {mean:.3f}, 95 % interval {low:.3f}-{high:.3f} over {logs.n} {unit}: {verdict}"


# -- build --------------------------------------------------------------------------------------------

def _build(engine, build, workdir: Path, repeats: int) -> None:
    files = _write_files(workdir / "load-files", build.settings.warehouses, engine.dialect)
    print("1. Build")
    ratios, loader_ratios = [], []
    for attempt in range(1, repeats + 1):
        files_first = attempt % 2 == 0  # alternate which goes first: the disk's flush time drifts
        baseline_s = _load_from_files(engine, files) if files_first else 0.0
        engine.destroy()
        started = time.perf_counter()
        result = api.load_database(engine, build, seed=SEED)
        maximus_s = time.perf_counter() - started
        baseline_s = baseline_s if files_first else _load_from_files(engine, files)
        ratios.append(maximus_s / baseline_s)
        loader_ratios.append(result.seconds / baseline_s)
        print(f"  {attempt}: Maximus build (generate + LOAD DATA + indexes + ANALYZE, then the pristine copy) "
              f"{maximus_s:5.1f} s, of which the loader {result.seconds:.1f} s; LOAD DATA of the same rows from "
              f"files + indexes + ANALYZE {baseline_s:5.1f} s; ratio {ratios[-1]:.2f}")
    print(f"  ratio Maximus / LOAD DATA from files: median {statistics.median(ratios):.2f} of "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (target <= 1.3); the loader alone, without the pristine copy: "
          f"median {statistics.median(loader_ratios):.2f}")
    print(f"  {_interval(ratios, 1.3, higher_is_better=False, unit='repeats')}\n")


def _write_files(directory: Path, warehouses: int, dialect) -> dict[str, Path]:
    """The loader's rows as LOAD DATA's text, one file per table (not timed)."""
    from maximus.workloads.tpcc.loader import stored_columns

    directory.mkdir()
    files = {table.name: directory / f"{table.name}.tsv" for table in schema.TABLES}
    handles = {name: path.open("wb") for name, path in files.items()}
    groups = [generate.items(SEED)] + [generate.warehouse_chunks(SEED, w, 0, "2026-01-01 00:00:00")
                                       for w in range(1, warehouses + 1)]
    for group in groups:
        for chunk in group:
            handles[chunk.table].write(copy_text(stored_columns(chunk, dialect)))
    for handle in handles.values():
        handle.close()
    return files


def _load_from_files(engine, files: dict[str, Path]) -> float:
    """The baseline: the same schema, LOAD DATA of each file, the same indexes and ANALYZE, on one session."""
    session = engine.connect()
    try:
        session.execute("DROP DATABASE IF EXISTS load_baseline")
        session.execute("CREATE DATABASE load_baseline CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
        session.execute("USE load_baseline")
        started = time.perf_counter()
        for statement in schema.schema_statements(engine.dialect):
            session.execute(statement)
        for table, path in files.items():
            columns = schema.TABLES_BY_NAME[table].column_names
            session.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {table} CHARACTER SET utf8mb4 "
                            f"({', '.join(columns)})")
        analyze = statements("load", loader.SQL, engine.dialect)["analyze"]
        for statement in schema.index_statements(engine.dialect) + [analyze(t.name) for t in schema.TABLES]:
            session.execute(statement)
        seconds = time.perf_counter() - started
        session.execute("DROP DATABASE load_baseline")
        return seconds
    finally:
        session.close()


# -- runs ---------------------------------------------------------------------------------------------

def _runs(options: argparse.Namespace, workdir: Path) -> None:
    print("2. Runs (same functions, same mix: the 23-card deck)")
    print(f"  {options.pairs} rounds per client count of Maximus server-side, sysbench, Maximus client-side and "
          "sysbench client-side, the order rotated")
    print(textwrap.fill(CLIENT_SIDE_NOTES, 116, initial_indent="  ", subsequent_indent="  "))
    print(f"  {'client':<22}{'clients':>8}{'round':>6}{'NO/min':>10}{'TPS':>9}{'client CPU s/1,000 txn':>24}"
          f"{'server CPU s/1,000 txn':>24}")
    for clients in options.client_counts:
        rounds = [_round(options, workdir, clients, number) for number in range(options.pairs)]
        rate = lambda name: [r[name]["no_per_min"] for r in rounds]  # noqa: E731
        server, sysbench, client = rate("Maximus server-side"), rate("sysbench"), rate("Maximus client-side")
        ratios = [m / s for m, s in zip(server, sysbench)]
        print(f"  ratio Maximus / sysbench New-Orders/min at {clients} clients: median {statistics.median(ratios):.2f} "
              f"of {', '.join(f'{r:.2f}' for r in ratios)} (target >= 0.95)")
        print(f"  {_interval(ratios, 0.95, higher_is_better=True, unit='rounds')}")
        modes = [c / s for c, s in zip(client, server)]
        print(f"  ratio client-side / server-side Maximus at {clients} clients: median "
              f"{statistics.median(modes):.2f} of {', '.join(f'{r:.2f}' for r in modes)}")
        own = [c / s for c, s in zip(client, rate("sysbench client-side"))]
        print(f"  ratio Maximus client-side / sysbench client-side New-Orders/min at {clients} clients: median "
              f"{statistics.median(own):.2f} of {', '.join(f'{r:.2f}' for r in own)} (target >= 0.9); "
              f"{_interval(own, 0.9, higher_is_better=True, unit='rounds')}")


def _round(options: argparse.Namespace, workdir: Path, clients: int, number: int) -> dict[str, dict[str, float]]:
    runs = {"Maximus server-side": lambda: _maximus_run(options, workdir, clients, "server"),
            "sysbench": lambda: _sysbench_run(options, workdir, clients),
            "Maximus client-side": lambda: _maximus_run(options, workdir, clients, "client"),
            "sysbench client-side": lambda: _sysbench_run(options, workdir, clients, client_side=True)}
    names = list(runs)[number % len(runs):] + list(runs)[:number % len(runs)]
    figures = {name: runs[name]() for name in names}
    for name in runs:
        row = figures[name]
        print(f"  {name:<22}{clients:>8}{number + 1:>6}{row['no_per_min']:>10,.0f}{row['tps']:>9,.0f}"
              f"{row['client_ms']:>24.3f}{row['server_ms']:>24.3f}")
    return figures


def _maximus_run(options: argparse.Namespace, workdir: Path, clients: int, transactions: str) -> dict[str, float]:
    """NOPM and CPU from the run's own report over the measured window."""
    run_options = api.BenchmarkOptions(engine="mariadb", knobs=KNOBS, settings={"warehouses": options.warehouses},
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
    if not figures.tpm:
        raise SystemExit(f"Maximus's run {outcome.run_id} ({outcome.status}) completed no transaction in its "
                         f"measured window: {'; '.join(outcome.result.errors) or 'no error reported'}")
    per_transaction_s = 60 / figures.tpm
    client_cpus = groups["client"].cpus + (groups["driver"].cpus if "driver" in groups else 0.0)
    return {"no_per_min": figures.committed, "tps": figures.tpm / 60,
            "client_ms": 1000 * client_cpus * per_transaction_s,
            "server_ms": 1000 * groups["server"].cpus * per_transaction_s}


def _sysbench_run(options: argparse.Namespace, workdir: Path, clients: int,
                  client_side: bool = False) -> dict[str, float]:
    """A warm-up invocation as long as Maximus's warm-up, then the measured one; New-Orders counted by the
    database, CPU by getrusage (sysbench) and /proc (the server). ``client_side``: the client-side statements
    (CLIENT_SIDE_NOTES), the run followed by the consistency check (3.3.2)."""
    build = api.Build.of("tpcc", {"warehouses": options.warehouses})
    engine = api.make_engine("mariadb", workdir, build, KNOBS)
    with api.running(engine):
        engine.restore()
        session = engine.connect()
        from maximus.workloads.tpcc.loader import install_procedures

        install_procedures(engine.dialect, session)
        script = _client_side_script(workdir, engine, session) if client_side else None
        if options.warmup >= 1:
            _sysbench(engine, options, clients, options.warmup, script)
        server = ProcessTree(engine.server_pid(), with_io=False)
        server_before = _server_cpu(server)
        (orders_before,) = session.fetchone("SELECT SUM(d_next_o_id) FROM district")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        output = _sysbench(engine, options, clients, options.duration, script)
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        (orders_after,) = session.fetchone("SELECT SUM(d_next_o_id) FROM district")
        server_s = _server_cpu(server) - server_before
        session.close()
        if client_side:
            _check(engine, build)
    # every event is a transaction; sysbench prints its SQL statistics only for a script on its own driver
    events = int(next(line for line in output.splitlines() if "total number of events:" in line).split()[-1])
    client_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    measured = max(1, int(options.duration))
    return {"no_per_min": float(orders_after - orders_before) * 60 / measured, "tps": events / measured,
            "client_ms": 1000 * client_s / events, "server_ms": 1000 * server_s / events, "wall_s": seconds}


def _check(engine, build) -> None:
    """TPC-C's consistency conditions (3.3.2) on the database as sysbench left it, as ``maximus check`` checks it:
    a script that wrote the wrong rows stops the bench here."""
    from maximus.database import check_running

    failed = [r for r in check_running(engine, build.workload, fresh=False) if r.passed is False]
    if failed:
        raise SystemExit("sysbench client-side left the database inconsistent: " +
                         "; ".join(f"{r.clause} {r.description}: {r.detail}" for r in failed))


def _server_cpu(server: ProcessTree) -> float:
    return sum(r.value for r in server.read() if r.name == "process_cpu_seconds_total")


def _sysbench(engine, options: argparse.Namespace, clients: int, seconds: float, script: Path | None = None) -> str:
    """sysbench connects the way Maximus's terminals do: to the managed server's Unix-domain socket; NURand's C
    are those of Maximus's run (2.1.6.1). ``script``: the client-side statements (``_client_side_script``), run by
    bench/mariadb_tpcc_client.lua on connections of its own; else bench/mariadb_tpcc.lua, the functions."""
    c = NURandConstants.for_run(NURandConstants.for_load(SEED).c_last, SEED)
    if script is None:
        command = ["sysbench", str(LUA), "--db-driver=mysql", f"--mysql-socket={engine.server.socket}",
                   "--mysql-user=root", f"--mysql-db={engine.database}", f"--mysql-ignore-errors={IGNORED}"]
    else:
        command = ["sysbench", str(CLIENT_SIDE_LUA), f"--statements={script}", f"--socket={engine.server.socket}",
                   "--user=root", f"--database={engine.database}"]
    command += [f"--threads={clients}", f"--time={max(1, int(seconds))}", f"--warehouses={options.warehouses}",
                f"--c_last={c.c_last}", f"--c_id={c.c_id}", f"--ol_i_id={c.ol_i_id}", "run"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"sysbench failed: {(done.stderr or done.stdout).strip()[-600:]}")
    return done.stdout


# -- sysbench client-side ------------------------------------------------------------------------------
# The statements of Maximus's client-side transactions on MariaDB, as its C profiles are given them, written as a Lua
# table for bench/mariadb_tpcc_client.lua: taken from the workload each time, they cannot drift from Maximus's.

def _client_side_script(workdir: Path, engine, session) -> Path:
    """The Lua file of the statements: ``fixed`` by the C profiles' names, New-Order's ``sets`` by kind, (district,)
    and row count, each a logical statement's parts {sql, the parameters it takes (from 0), returns}; ``begin``
    each transaction's BEGIN as the session writes it (Order-Status's one snapshot); ``session`` the sql_mode
    Maximus's sessions set."""
    from maximus.engines.mariadb.sessions import SQL_MODE
    from maximus.workloads.tpcc import native
    from maximus.workloads.tpcc.constants import DISTRICTS_PER_WAREHOUSE, MAX_ORDER_LINES
    from maximus.workloads.tpcc.delivery import Delivery
    from maximus.workloads.tpcc.new_order import NewOrder
    from maximus.workloads.tpcc.order_status import OrderStatus
    from maximus.workloads.tpcc.payment import Payment
    from maximus.workloads.tpcc.stock_level import StockLevel

    transactions = {t.name: t(engine.dialect) for t in (NewOrder, Payment, OrderStatus, Delivery, StockLevel)}
    placed: NewOrder = transactions["new_order"]
    counts = range(1, MAX_ORDER_LINES + 1)
    form = lambda kind, district, count: _parts(native.statement_form(placed.rows_sql(kind, district, count)))  # noqa: E731
    begins = {}
    for name, transaction in transactions.items():
        session.begin(read_only=transaction.read_only, one_snapshot=transaction.one_snapshot)
        begins[name] = session.take_begin().decode()
    statements = {
        "session": SQL_MODE, "begin": begins,
        "fixed": {name: _parts(text) for name, text in native.statement_texts(transactions).items()},
        "sets": {"items": {n: form("items", 0, n) for n in counts},
                 "restock": {n: form("restock", 0, n) for n in counts},
                 "lines": {n: form("lines", 0, n) for n in counts},
                 "stock": {d: {n: form("stock", d, n) for n in counts} for d in range(1, DISTRICTS_PER_WAREHOUSE + 1)}},
    }
    path = workdir / "sysbench-client-side.lua"
    path.write_text("return " + _lua(statements) + "\n")
    return path


def _parts(form) -> tuple:
    """A statement as its parts (sql, takes, returns): a text is one part taking the parameters in order."""
    return ((form, tuple(range(form.count("?"))), True),) if isinstance(form, str) else form


def _lua(value) -> str:
    """``value`` (text, integers, booleans, tuples, dicts) as a Lua constructor; tuples become sequences."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{_lua(k)}] = {_lua(v)}" for k, v in value.items()) + "}"
    return "{" + ", ".join(_lua(item) for item in value) + "}"


if __name__ == "__main__":
    main()
