"""Every script under bench/ runs here in its smoke mode (``--smoke``: the smallest sizes, seconds), the same code
path as a real run, so a refactor that breaks one fails the suite (sqlite_tpcc.py once broke unseen). Each must end
with 0, print the lines a real run prints (its tables and ratios), and leave no server running and none of its
directories behind. The peer tools they run (pgbench, sysbench) are installed by scripts/system-packages."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from interrupting import default_dispositions  # tests/interrupting.py

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
TIMEOUT_S = 120  # a smoke run takes 1-50 s on 2 cores, busy; with the grace below, within pytest's 300 s
# An interrupted script (SIGINT) stops its servers and removes its directories within this: longer than the engines'
# stop timeout (MariaDB's 120 s), after which a server that hangs in its shutdown is killed
GRACE_S = 150
SETTLE_S = 10  # a server the script asked to stop may take this long to exit after the script has
OWN_PREFIX = "maximus-bench-"  # of every directory a bench script makes, under /tmp or /var/tmp

N = r"-?[\d,]+(?:\.\d+)?"  # a printed number: 1,234 or 0.95
POSITIVE = r"[1-9][\d,]*"  # a count that cannot be 0 after a run that worked: New-Orders per minute


@dataclass(frozen=True)
class Smoke:
    # of the script's own directories and so of its servers' command lines: a smoke running beside another (xdist)
    # must not count the other's directories and processes as its own leftovers
    prefix: str
    lines: tuple[str, ...]  # regular expressions, each matching the start of a line a real run prints
    takes_workdir: bool = False  # SQLite's scripts; the servers' make theirs under /var/tmp, for the server's user


def _server_runs(peer: str, clients: int) -> tuple[str, ...]:
    """The runs table and ratio lines that postgres_tpcc.py and mariadb_tpcc.py print for one round."""
    rows = tuple(rf"  {name}\s+{clients}\s+1\s+{POSITIVE}\s+{N}\s+{N}\s+{N}"
                 for name in ("Maximus server-side", peer, "Maximus client-side"))
    return rows + (rf"  ratio Maximus / {peer} New-Orders/min at {clients} clients: median {N} of {N} ",
                   rf"  geometric mean {N} of one round: no interval$",
                   rf"  ratio client-side / server-side Maximus at {clients} clients: median {N} of {N}")


def _builds(baseline: str) -> tuple[str, ...]:
    """The build lines of postgres_tpcc.py and mariadb_tpcc.py for two builds, the second with the baseline first."""
    return (r"1\. Build$", rf"  1: Maximus build .* ratio {N}$", rf"  2: Maximus build .* ratio {N}$",
            rf"  ratio Maximus / {baseline}: median {N} of {N}, {N} ",
            rf"  geometric mean {N}, 95 % interval {N}-{N} over 2 repeats: the target is (met|missed|within noise)$")


SQLITE_CONFIGS = ("wal\\+full", "wal\\+off", "delete\\+full")
LAYOUTS = ("ext4 on loop, 4 GB", "xfs on loop, 4 GB", "btrfs on loop, 4 GB", "tmpfs, 4 GB", "ext4 on zram, 1 GB")

SMOKES = {
    "sqlite_tpcc.py": Smoke(prefix=f"{OWN_PREFIX}sqlite-", takes_workdir=True, lines=(
        r"Maximus's transactions run their statements in C \(workloads/tpcc/_profiles\.c\)\.$",
        rf"Build of 1 warehouse: {N} s$",
        r"  config\s+ceiling\s+Maximus\s+NO/min\s+CPU/txn\s+failed\s+replay\s+CPU/txn\s+Maximus/$",
        *(rf"  {config}\s+{POSITIVE}\s+{POSITIVE}\s+{N}\s+{N}\s+0\s+{POSITIVE}\s+{N}\s+{N}$"
          for config in SQLITE_CONFIGS),
        rf"  CPU per transaction, wal\+full: {N} ms \(target <= 0\.4 ms: (met|NOT met)\)$",
        rf"  CPU per transaction, wal\+off: {N} ms \(target <= 0\.4 ms: (met|NOT met)\)$",
        rf"  wal\+full: {N} txn/s \(target >= 1,986, 1\.5 x the 1,324 BenchBase reached on this machine, a figure "
        r"QUOTED ",
        *(rf"  Maximus / SQLite replaying its statements, {config}: {N} \(target >= 0\.8: (met|NOT met)\)$"
          for config in SQLITE_CONFIGS),
        rf"  delete\+full in series: 1 / \(1/{N} commits/s \+ {N} ms\) = {N} txn/s allowed; Maximus {N} txn/s = {N} "
        r"of it \(target >= 0\.9: (met|NOT met)\)$")),
    "powercut_overhead.py": Smoke(prefix=f"{OWN_PREFIX}powercut-", lines=(
        r"SQLite WAL, 50 one-row commits per measurement, 2 rounds, in /tmp/maximus-bench-powercut-",
        *(rf"  synchronous={setting}\s+round {index}: mount\s+{N} commits/s · plain\s+{N} commits/s · time ratio "
          rf"{N} \((mount|plain) first\)$" for setting in ("off", "full") for index in (1, 2)),
        *(rf"synchronous={setting}: time on the mount / without it: median {N} over 2 rounds \(range {N}-{N}\)$"
          for setting in ("off", "full")),
        rf"  pass-through cost: {N} FUSE writes per commit, {N} µs added per write \({N} µs per commit\)$")),
    "crash_verdicts.py": Smoke(prefix=f"{OWN_PREFIX}crash-", lines=(
        r"Crash verdicts at 1 warehouse, 4 terminals, in /var/tmp/maximus-bench-crash-",
        rf"  sqlite journal_mode=wal synchronous=full\s+2 cuts: {N} of {N} acknowledged lost in {N} cuts, {N} "
        rf"inconsistent; 95 % upper bound of the per-cut loss probability {N}%",
        r"  sqlite journal_mode=wal synchronous=normal\s+power: ",
        r"  sqlite journal_mode=wal synchronous=normal\s+SIGKILL: ",
        rf"  sqlite journal_mode=wal synchronous=full\s+{N} s per power-cut cycle",
        r"4\. The layer's cost on throughput: bench/powercut_overhead.py")),
    "rate_stall.py": Smoke(prefix=f"{OWN_PREFIX}rate-", lines=(
        r"Fixed-rate runs on PostgreSQL, 1 warehouse, 8 terminals, 1.5-s windows, in /var/tmp/maximus-bench-rate-",
        rf"  fixed rate, undisturbed\s+{N}/s  latency p99\s+{N} ms  service p99\s+{N} ms  over 1 s: {N} latency",
        rf"  fixed rate, stalled\s+{N}/s  latency p99\s+{N} ms",
        rf"  closed loop, stalled\s+{N}/s  latency p99\s+{N} ms",
        r"\s+(rate sustained at|not sustainable at) 50/s",
        r"  target: stalled latency p99 >= -0.5 s .*: (met|missed)$",
        rf"  start-time error p99: median {N} ms of 1 runs: the target \(< 1 ms\) is (met|missed)$")),
    "ray_hosts.py": Smoke(prefix=f"{OWN_PREFIX}ray-", lines=(
        r"Client hosts on a local Ray cluster \(2 nodes of \d+ CPUs each, \d+ cores in all\), PostgreSQL io-random on "
        r"a 1 MB table, 2 terminals a host, 1.5-s windows, 1 round\(s\), in /var/tmp/maximus-bench-ray-",
        r"  round  mode   hosts  terminals       txn/s  client CPUs  txn/client CPU  machine idle$",
        rf"  1      local      1          2\s+{N}\s+{N}\s+{N}\s+({N} %|-)$",
        rf"  1      ray        1          2\s+{N}\s+{N}\s+{N}\s+({N} %|-)$",
        rf"  1      ray        2          4\s+{N}\s+{N}\s+{N}\s+({N} %|-)$",
        rf"  ratio --hosts 1 / this machine alone: median {N} of 1 round\(s\)",
        rf"  ratio 2 hosts / \(2 x one host\): median {N} of 1 round\(s\) .*the target \(>= 0.9\) is (met|missed) in "
        r"transactions$",
        rf"  per client CPU-second, 2 hosts / one host: median {N} \(range {N}-{N}\); with the CPU the hosts really "
        r"got, the target \(>= 0.9\) is (met|missed)$",
        r"  on this machine the 2 hosts, the coordinator and the server share its \d+ cores")),
    "io_vs_fio.py": Smoke(prefix=f"{OWN_PREFIX}io-", lines=(
        r"Storage-bound runs against fio, a 8 MB table, 1 s each, in /var/tmp/maximus-bench-io-",
        rf"  sqlite\s+io-random\s+1\s+{N}\s+{N} reads/s\s+ratio {N} \(one batch\)\s+(device|cache|CPU)-bound"
        rf"\s+CPU us/op: .*; read calls/op: client {N}",
        *(rf"  sqlite\s+io-scan {caches}\s+1\s+{N}\s+{N} MB/s\s+ratio {N} \(one batch\)\s+(device|cache|CPU)-bound"
          for caches in ("cold", "warm")),
        r"Targets: io-random at 16 clients and io-scan \(cold\) at least 0\.8 of fio")),
    "monitoring_overhead.py": Smoke(prefix=f"{OWN_PREFIX}monitoring-", takes_workdir=True, lines=(
        rf"pair 1: monitored\s+{N} TPM \({N} tpmC\) · unmonitored\s+{N} TPM \({N} tpmC\) · ratio {N} "
        r"\(monitored first\)$",
        rf"pair 2: monitored\s+{N} TPM \({N} tpmC\) · unmonitored\s+{N} TPM \({N} tpmC\) · ratio {N} "
        r"\(unmonitored first\)$",
        rf"mean ratio monitored/unmonitored {N}, standard deviation {N} over 2 pairs",
        rf"the monitor's own readings: {N} ms of CPU per second of run")),
    "os_knobs.py": Smoke(prefix=f"{OWN_PREFIX}os-", lines=(
        rf"\d+ machine knobs, 1 repeats: journal \+ apply \+ read back median {N} ms, put back median {N} ms$",
        rf"added to a run: {N} ms, {N} of the 1 s allowed \((met|NOT met)\)$",
        *(rf"layout {layout}: make median {N} ms, remove median {N} ms$" for layout in LAYOUTS))),
    "postgres_terminals_memory.py": Smoke(prefix=f"{OWN_PREFIX}memory-", lines=(
        r"10 keyed terminals \(keying \+ think times of 5\.2\.5\), 1 warehouses, 2 s measured; \d+ terminals per "
        r"worker process$",
        r"  status complete; failed transactions 0$",
        rf"  peak client RSS: {N} MiB over \d+ Maximus processes = {N} KiB per terminal$",
        rf"  tpmC {N} against the keyed ceiling of {N} ")),
    "run_memory.py": Smoke(prefix=f"{OWN_PREFIX}run-memory-", lines=(
        r"A run's samples in the process that runs it: 50,000 a way, each way in a process of its own$",
        *(rf"  {kind}\s+{way}\s+{N}\s+{N}\s+{N}$" for kind in ("runs", "tuples")
          for way in (r"records \(before\)", r"columns \(now\)")),
        *(rf"  ratio columns / records, {kind}: peak memory {N}, CPU in the run and at its end {N}$"
          for kind in ("runs", "tuples")))),
    "stored_samples.py": Smoke(prefix=f"{OWN_PREFIX}stored-", lines=(
        r"A run's 20,000 samples in the results store, each way in a database of its own$",
        r"  way\s+store s\s+read s\s+store ns/sample\s+read ns/sample\s+bytes/sample$",
        *(rf"  {way}\s+{N}\s+{N}\s+{N}\s+{N}\s+{N}$" for way in (r"rows \(before\)", r"columns \(now\)")),
        rf"  ratio columns / rows: store {N}, read {N}, size {N}$")),
    "runs_listing.py": Smoke(prefix=f"{OWN_PREFIX}runs-", lines=(
        rf"stored 20 runs of 200 samples in {N} s$",
        rf"`maximus runs` \(the command, start included\): {N} s$",
        rf"listed_runs \(the store counts\):\s+{N} s$",
        rf"analyse_run of every run \(before\):\s+{N} s$",
        rf"ratio before/now \(in-process\): {N}x; target: the command under 1 s \((met|not met)\)$")),
    "postgres_tpcc.py": Smoke(prefix=f"{OWN_PREFIX}pg-", lines=(
        rf"PostgreSQL \S+ managed in /var/tmp/{OWN_PREFIX}pg-",
        *_builds("COPY-from-files"),
        r"2\. Runs ",
        r"  client\s+clients\s+pair\s+NO/min\s+TPS\s+client CPU s/1,000 txn\s+server CPU s/1,000 txn\s+switches/txn$",
        *_server_runs("pgbench", clients=2),
        rf"  pgbench client-side\s+2\s+1\s+{POSITIVE}\s+{N}\s+{N}\s+{N}\s+{N}$",
        rf"  ratio Maximus client-side / pgbench client-side New-Orders/min at 2 clients: median {N} of {N}  "
        r"\(target >= 0\.9\); geometric mean \S+ of one round: no interval$")),
    "mariadb_tpcc.py": Smoke(prefix=f"{OWN_PREFIX}mariadb-", lines=(
        rf"MariaDB \S+ managed in /var/tmp/{OWN_PREFIX}mariadb-",
        *_builds("LOAD DATA from files"),
        r"server configuration: version=",
        r"2\. Runs ",
        r"  client\s+clients\s+round\s+NO/min\s+TPS\s+client CPU s/1,000 txn\s+server CPU s/1,000 txn$",
        *_server_runs("sysbench", clients=2),
        rf"  sysbench client-side\s+2\s+1\s+{POSITIVE}\s+{N}\s+{N}\s+{N}$",
        rf"  ratio Maximus client-side / sysbench client-side New-Orders/min at 2 clients: median {N} of {N} "
        r"\(target >= 0\.9\); geometric mean \S+ of one round: no interval$")),
}
SMOKE_NOTICE = r"smoke mode: "  # the line that says the figures mean nothing


def _own_directories(prefix: str) -> set[Path]:
    return {path for parent in (Path("/tmp"), Path("/var/tmp")) for path in parent.glob(f"{prefix}*")}


def _own_processes(prefix: str) -> dict[int, str]:
    """Processes whose command line names one of the script's directories: its managed servers."""
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # it has just exited
            continue
        if prefix in text:
            found[int(cmdline.parent.name)] = text
    return found


def _run(command: list[str]) -> subprocess.CompletedProcess:
    """The script's run, interrupted like a user's Ctrl-C after TIMEOUT_S, so that it stops its servers and removes
    its directories (a SIGKILL would leave them), and killed only if it has not ended GRACE_S later."""
    script = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=default_dispositions)
    try:
        stdout, stderr = script.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        script.send_signal(signal.SIGINT)
        try:
            stdout, stderr = script.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            script.kill()
            stdout, stderr = script.communicate()
        pytest.fail(f"{command[1]} --smoke took more than {TIMEOUT_S} s\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(command, script.returncode, stdout, stderr)


def _left_running(prefix: str, before: dict[int, str]) -> dict[int, str]:
    """The script's processes still there SETTLE_S after it ended."""
    deadline = time.monotonic() + SETTLE_S
    while (left := {pid: text for pid, text in _own_processes(prefix).items() if pid not in before}) and \
            time.monotonic() < deadline:
        time.sleep(0.2)
    return left


# Run in the file of the tests that change the same machine knobs (tests/system/test_os_knobs.py), so never at the
# same time as they are (xdist deals a file to one worker): two journals changing one knob at once would each put
# back what the other had set.
BESIDE_SYSTEM_TESTS = ("os_knobs.py",)


@pytest.mark.parametrize("path", [path for path in sorted(BENCH.glob("*.py")) if path.name not in BESIDE_SYSTEM_TESTS],
                         ids=lambda path: path.name)
def test_each_benchmark_runs_end_to_end_in_smoke_mode(path: Path, tmp_path: Path) -> None:
    runs_in_smoke_mode(path, tmp_path)


def runs_in_smoke_mode(path: Path, tmp_path: Path) -> None:
    """The script's smoke run ends with 0, prints its lines, and leaves no server and no directory of its own."""
    assert path.name in SMOKES, f"give {path.name} a --smoke mode and its expected lines here"
    smoke = SMOKES[path.name]
    command = [sys.executable, str(path), "--smoke"] + (["--workdir", str(tmp_path / "work")]
                                                        if smoke.takes_workdir else [])
    directories, processes = _own_directories(smoke.prefix), _own_processes(smoke.prefix)
    started = time.perf_counter()
    done = _run(command)
    seconds = time.perf_counter() - started
    left_running = _left_running(smoke.prefix, processes)
    left_behind = _own_directories(smoke.prefix) - directories
    output = f"{done.stdout}\n--- stderr ---\n{done.stderr}\n--- {seconds:.1f} s"
    assert done.returncode == 0, output
    assert "Traceback" not in done.stderr, output  # a worker process that failed while the script went on
    missing = [line for line in (SMOKE_NOTICE, *smoke.lines) if not re.search(f"^{line}", done.stdout, re.M)]
    assert not missing, f"lines missing: {missing}\n{output}"
    assert not left_running, f"servers left running: {left_running}"
    assert not left_behind, f"directories left behind: {left_behind}"


def test_no_two_scripts_share_a_directory_prefix() -> None:
    """Two smokes run side by side each count only their own leftovers, which holds only while no prefix is the start
    of another's."""
    prefixes = [smoke.prefix for smoke in SMOKES.values()]
    clashes = [(one, other) for one in prefixes for other in prefixes if one != other and other.startswith(one)]
    assert len(set(prefixes)) == len(prefixes) and not clashes, clashes
