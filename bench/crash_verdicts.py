"""Crash tests against the targets of issue #42: how many acknowledged commits each configuration loses.

- Each durable configuration (SQLite WAL + synchronous=FULL, SQLite DELETE + synchronous=EXTRA, PostgreSQL's defaults,
  MariaDB with innodb_flush_log_at_trx_commit=1) is power-cut ``--cuts`` times (default 200) at the crash test's
  default odds (each pending write kept, dropped or torn), and the acknowledged commits lost are counted: the target
  is 0, and with none lost in n cuts the per-cut loss probability is below 1 - 0.05^(1/n) with 95 % confidence
  (printed).
- Each lossy configuration (SQLite WAL + NORMAL and synchronous=OFF, PostgreSQL synchronous_commit=off and
  fsync=off, MariaDB innodb_flush_log_at_trx_commit=2 and 0), at its own defaults otherwise, is power-cut until its
  first loss, at most 20 times; those whose loss needs an operating-system crash (all but synchronous_commit=off and
  innodb_flush_log_at_trx_commit=0) are then SIGKILLed ``--kills`` times (default
  20), where none may lose: the difference is what tells a process crash from a power cut.
- The seconds per crash, recovery and verification cycle at 1 warehouse (target at most 60 s), from the durable
  configurations' cycles (the build, made once per engine, is not counted).

Every cycle is a real crash test (``maximus.api.crash_test``): 4 terminals, crash drawn in [1 s, 3 s] after their
release. The layer's cost on throughput is ``bench/powercut_overhead.py``'s (its figures are in bench/README.md):
this script does not measure it again. ``--engines`` chooses whose configurations run.

Usage (from the repository root, as root: the layer mounts with allow_other for PostgreSQL's user):

    .venv/bin/python bench/crash_verdicts.py [--cuts 200] [--kills 20] [--engines sqlite,postgres,mariadb]
                                             [--quick] [--smoke]

--quick: 20 cuts per durable configuration, 5 kills. --smoke: 2 cuts, 1 kill, lossy configurations cut at most
twice, SQLite only: it checks that the script works, and its figures mean nothing.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from maximus import api
from maximus.records import Verdict

SMOKE_NOTICE = ("smoke mode: the smallest sizes, to check that the script works end to end; "
                "its figures mean nothing")
PREFIX = "maximus-bench-crash-"  # tests/test_bench.py checks that nothing of this name is left behind
MAX_CUTS_TO_LOSS = 20


@dataclass(frozen=True)
class Configuration:
    engine: str
    knobs: dict[str, str]
    needs_os_crash: bool = True  # its loss needs a power cut: a SIGKILL must lose nothing

    @property
    def name(self) -> str:
        return f"{self.engine} {' '.join(f'{k}={v}' for k, v in self.knobs.items()) or 'defaults'}"


DURABLE = (Configuration("sqlite", {"journal_mode": "wal", "synchronous": "full"}),
           Configuration("sqlite", {"journal_mode": "delete", "synchronous": "extra"}),
           Configuration("postgres", {}),
           Configuration("mariadb", {"innodb_flush_log_at_trx_commit": "1"}))
LOSSY = (Configuration("sqlite", {"journal_mode": "wal", "synchronous": "normal"}),
         Configuration("sqlite", {"synchronous": "off"}),
         Configuration("postgres", {"synchronous_commit": "off"}, needs_os_crash=False),
         Configuration("postgres", {"fsync": "off"}),
         Configuration("mariadb", {"innodb_flush_log_at_trx_commit": "2"}),
         Configuration("mariadb", {"innodb_flush_log_at_trx_commit": "0"}, needs_os_crash=False))


@dataclass
class Tally:
    cycles: int = 0
    lost_cycles: int = 0
    lost_commits: int = 0
    acknowledged: int = 0
    inconsistent: int = 0
    seconds: float = 0.0

    def add(self, tests: list[api.CrashTest], seconds: float) -> None:
        self.cycles += len(tests)
        self.seconds += seconds
        for test in tests:
            self.acknowledged += test.findings.acknowledged
            self.lost_commits += len(test.findings.lost)
            self.lost_cycles += bool(test.findings.lost)
            self.inconsistent += test.verdict is Verdict.INCONSISTENT


def upper_bound(cycles: int) -> float:
    """The 95 % upper bound of the per-cycle loss probability after ``cycles`` cycles without a loss."""
    return 1 - 0.05 ** (1 / cycles)


class Bench:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.results = base / "results.db"

    def crash(self, config: Configuration, mode: api.CrashMode, crashes: int, seed: int) -> tuple[list, float]:
        workdir = self.base / f"{config.engine}-{mode.value}"
        workdir.mkdir(exist_ok=True)
        workdir.chmod(0o755)
        options = api.CrashTestOptions(
            api.BenchmarkOptions(engine=config.engine, knobs=config.knobs, terminals=4, warmup_s=1.0,
                                 duration_s=2.0, seed=seed, workdir=workdir, results=self.results,
                                 settings={"warehouses": 1}),
            mode, crashes=crashes)
        started = time.monotonic()
        ids = api.crash_test(options)
        seconds = time.monotonic() - started
        return [record.test for record in api.crash_tests(self.results, ids=ids)], seconds

    def warm(self, engine: str, mode: api.CrashMode) -> None:
        """One cycle, not counted: the engine's build on this side, made once."""
        self.crash(Configuration(engine, {}), mode, 1, 999_999)

    def until_loss(self, config: Configuration, mode: api.CrashMode, limit: int) -> tuple[int | None, Tally]:
        """Cycles until the first lost commit (its number) or ``limit`` without one (None)."""
        tally = Tally()
        for number in range(1, limit + 1):
            tests, seconds = self.crash(config, mode, 1, number)
            tally.add(tests, seconds)
            if tests[0].findings.lost or tests[0].verdict is Verdict.INCONSISTENT:
                return number, tally
        return None, tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cuts", type=int, default=200, help="power cuts per durable configuration")
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs per lossy configuration needing an OS crash")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--engines", default="sqlite,postgres,mariadb", help="the engines whose configurations run")
    parser.add_argument("--only", default="", help="only the configurations whose name contains this text")
    args = parser.parse_args()
    cuts, kills, to_loss = args.cuts, args.kills, MAX_CUTS_TO_LOSS
    chosen = set(args.engines.split(","))
    durable = tuple(c for c in DURABLE if c.engine in chosen and args.only in c.name)
    lossy = tuple(c for c in LOSSY if c.engine in chosen and args.only in c.name)
    if args.quick:
        cuts, kills = 20, 5
    if args.smoke:
        print(SMOKE_NOTICE)
        cuts, kills, to_loss = 2, 1, 2
        durable, lossy = durable[:1], lossy[:1]
    base = Path(tempfile.mkdtemp(prefix=PREFIX, dir="/var/tmp"))
    base.chmod(0o755)
    try:
        run(Bench(base), durable, lossy, cuts, kills, to_loss)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(bench: Bench, durable, lossy, cuts: int, kills: int, to_loss: int) -> None:
    power, process = api.CrashMode.POWER, api.CrashMode.PROCESS
    print(f"Crash verdicts at 1 warehouse, 4 terminals, in {bench.base}")
    engines = sorted({config.engine for config in (*durable, *lossy)})
    for engine in engines:
        bench.warm(engine, power)
        if any(config.engine == engine and config.needs_os_crash for config in lossy):
            bench.warm(engine, process)
    print(f"1. Durable configurations, {cuts} power cuts each (target: 0 acknowledged commits lost)")
    per_cycle: dict[str, float] = {}
    for config in durable:
        tests, seconds = bench.crash(config, power, cuts, 1)
        tally = Tally()
        tally.add(tests, seconds)
        per_cycle[config.name] = seconds / tally.cycles
        verdict = "met" if not tally.lost_cycles and not tally.inconsistent else "NOT met"
        print(f"  {config.name:<45} {tally.cycles} cuts: {tally.lost_commits} of {tally.acknowledged:,} acknowledged "
              f"lost in {tally.lost_cycles} cuts, {tally.inconsistent} inconsistent; 95 % upper bound of the per-cut "
              f"loss probability {upper_bound(tally.cycles):.2%} ({verdict})")
    print(f"2. Lossy configurations: power cuts until the first loss (at most {to_loss}), then {kills} SIGKILLs "
          "for those whose loss needs an OS crash (target: none lost)")
    for config in lossy:
        first, tally = bench.until_loss(config, power, to_loss)
        print(f"  {config.name:<45} power: " + (f"first loss at cut {first} ({tally.lost_commits} lost, "
                                                f"{tally.inconsistent} inconsistent)" if first else
                                                f"no loss in {to_loss} cuts (target NOT met)"))
        if config.needs_os_crash:
            killed = Tally()
            for number in range(1, kills + 1):
                tests, seconds = bench.crash(config, process, 1, number)
                killed.add(tests, seconds)
            print(f"  {config.name:<45} SIGKILL: {killed.lost_commits} lost in {killed.lost_cycles} of {killed.cycles} "
                  f"kills, {killed.inconsistent} inconsistent "
                  f"({'met' if not killed.lost_cycles and not killed.inconsistent else 'NOT met'})")
    print("3. Seconds per crash, recovery and verification cycle at 1 warehouse (target <= 60 s)")
    for name, seconds in per_cycle.items():
        print(f"  {name:<45} {seconds:.1f} s per power-cut cycle ({'met' if seconds <= 60 else 'NOT met'})")
    print(f"  worst {max(per_cycle.values()):.1f} s, median {statistics.median(per_cycle.values()):.1f} s")
    print("4. The layer's cost on throughput: bench/powercut_overhead.py (figures in bench/README.md)")


if __name__ == "__main__":
    main()
