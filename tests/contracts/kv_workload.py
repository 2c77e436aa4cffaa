"""A minimal second workload, for the contract tests: a key-value table read and written at random.

It implements ``workloads.base.Workload`` and nothing else: registered with one line (the tests put it in
``WORKLOADS``), it runs through ``maximus run``, which offers its own options (``--keys``), and is reported,
stored and exported under its own names, which shows that generic code asks the workload instead of assuming
TPC-C. The terminal processes receive it as it is (``DriveSpec.workload``), so it need not be registered there.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from maximus import limits
from maximus.engines.base import Dialect, Engine, Session
from maximus.bands import COUNT
from maximus.records import Band, CheckResult, DeviceJob, StorageAccess
from maximus.workloads.base import (CommandLineSetting, DatabaseInfo, Headline, LoadResult, Presentation, Progress,
                                    SettingError, Workload)

ROWS = limits.Limit(1, 1_000_000)


@dataclass(frozen=True)
class KvSettings:
    rows: int = 1000
    write_percent: int = 20

    def to_mapping(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KvRunSettings:
    rows: int
    write_percent: int
    seed: int
    server_side: bool = False
    pauses: bool = False
    one_call: bool = False


class Read:
    name, read_only, deferred, one_snapshot = "read", True, False, False
    isolation_means = "one statement"

    def execute(self, session: Session, key: int) -> Any:
        return session.fetchone("SELECT v FROM kv WHERE k = ?", (key,))

    def summed_facts(self, inputs: Any) -> dict[str, int]:
        return {}


class Write:
    name, read_only, deferred, one_snapshot = "write", False, False, False
    isolation_means = "one statement"

    def execute(self, session: Session, key: int) -> Any:
        return session.execute("UPDATE kv SET v = v + 1 WHERE k = ?", (key,))

    def summed_facts(self, inputs: Any) -> dict[str, int]:
        return {"kv.writes": len(inputs)}


class KvEmulator:
    headline = "read"

    def __init__(self, settings: KvRunSettings, terminal: int) -> None:
        self.settings, self.random = settings, random.Random(settings.seed * 1000 + terminal)
        self.pauses = settings.pauses
        self.read, self.write = Read(), Write()

    def next(self) -> tuple[Any, int]:
        transaction = self.write if self.random.randrange(100) < self.settings.write_percent else self.read
        return transaction, self.random.randrange(self.settings.rows) + 1

    def batch(self, count: int) -> list[tuple[Any, int]]:
        return [self.next() for _ in range(count)]

    def keying_time(self, name: str) -> float:
        return 0.0

    def think_time(self, name: str) -> float:
        return 0.0


class KvWorkload(Workload):
    name = "kv"
    headline = Headline("reads_per_min", "reads/min", "reads per minute", "read", "committed_reads_per_min",
                        "committed reads/min", "committed reads per minute", "Reads")
    reported_transactions = ("read", "write")
    setting_names = ("rows", "write_percent")
    # a flag need not be the key's name: `--keys` gives `rows`
    options = (CommandLineSetting("rows", "--keys", int, "kv: number of keys, a row each", chooses_database=True),
               CommandLineSetting("write_percent", "--write-percent", int, "kv: share of transactions that write, %"))

    def settings(self, given: Mapping[str, Any]) -> KvSettings:
        unknown = set(given) - set(self.setting_names)
        if unknown:
            raise SettingError(sorted(unknown)[0], "not a setting of the kv workload")
        settings = KvSettings(**given)
        if not ROWS.allows(settings.rows):
            raise SettingError("rows", f"expected {ROWS.describe()}, got {settings.rows!r}", ROWS, settings.rows)
        return settings

    def presentation(self, settings: KvSettings, terminals: int | None = None) -> Presentation:
        return Presentation(self.headline, "key-value", True, f"{settings.rows} rows", f"{settings.rows} rows",
                            f"{settings.write_percent} % writes", "Not a specified benchmark.",
                            {"read": "Read", "write": "Write"}, {})

    def scale(self, settings: KvSettings) -> int:
        return settings.rows

    def database_name(self, settings: KvSettings) -> str:
        return f"kv-{settings.rows}"

    def load(self, engine: Engine, settings: KvSettings, seed: int, progress: Progress) -> LoadResult:
        started = time.perf_counter()
        engine.provision()
        session = engine.connect()
        try:
            session.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            session.execute("CREATE TABLE kv_meta (scale INTEGER, seed INTEGER, load_seconds REAL, fresh INTEGER, "
                            "creation TEXT)")
            session.begin()
            engine.bulk_insert(session, "kv", ("k", "v"), ((k, 0) for k in range(1, settings.rows + 1)))
            session.commit()
            progress("kv", settings.rows)
            seconds = time.perf_counter() - started
            session.begin()
            session.execute("INSERT INTO kv_meta VALUES (?, ?, ?, 1, ?)",
                            (settings.rows, seed, seconds, json.dumps(engine.creation_settings())))
            session.commit()
        finally:
            session.close()
        return LoadResult(settings.rows, seed, seconds, {"kv": settings.rows})

    def database_info(self, session: Session, dialect: Dialect) -> DatabaseInfo | None:
        try:
            row = session.fetchone("SELECT scale, seed, load_seconds, fresh, creation FROM kv_meta")
        except Exception:
            return None
        if row is None:
            return None
        scale, seed, seconds, fresh, creation = row
        return DatabaseInfo(scale, seed, seconds, bool(fresh), json.loads(creation))

    def expected_rows(self, settings: KvSettings) -> Mapping[str, int]:
        return {"kv": settings.rows}

    def mark_used(self, session: Session) -> None:
        session.execute("UPDATE kv_meta SET fresh = 0")

    def run_settings(self, settings: KvSettings, seed: int, info: DatabaseInfo, server_side: bool) -> KvRunSettings:
        return KvRunSettings(settings.rows, settings.write_percent, seed)

    def transactions(self, dialect: Dialect, run_settings: Any = None) -> dict[str, Any]:
        return {"read": Read(), "write": Write()}

    def write_transactions(self) -> set[str]:
        return {"write"}

    def validity_bands(self, settings: KvSettings) -> list[Band]:
        """The writes' share within ten points of the one asked for: stored with each run as data, computed by the
        read side, which knows no kv workload."""
        return [Band("write_share_percent", (f"{COUNT}write",), (f"{COUNT}read", f"{COUNT}write"),
                     settings.write_percent - 10.0, settings.write_percent + 10.0, "kv.2")]

    def device_job(self, settings: KvSettings, terminals: int, access: StorageAccess, data_bytes: int,
                   info: Any = None) -> DeviceJob | None:
        """Read-only, it reads single rows at random: fio's random reads of a page, a job per terminal."""
        if settings.write_percent:
            return None
        return DeviceJob("randread", access.page_bytes, terminals, max(data_bytes, 1 << 20), access.direct,
                         access.mapped, runtime_s=1.0)

    def emulator(self, run_settings: KvRunSettings, terminal: int, dialect: Dialect) -> KvEmulator:
        return KvEmulator(run_settings, terminal)

    def check(self, session: Session, fresh: bool, dialect: Dialect) -> list[CheckResult]:
        (rows,) = session.fetchone("SELECT COUNT(*) FROM kv")
        (scale,) = session.fetchone("SELECT scale FROM kv_meta")
        return [CheckResult(1, "kv.1", "every row is still there", rows == scale,
                            "" if rows == scale else f"{rows} rows, {scale} loaded")]
