"""A minimal second engine, for the contract tests: one file of Python's own ``sqlite3``, two knobs.

It implements ``engines.base.Engine`` and nothing else (its sessions are SQLite's, a ``sqlite3`` connection),
and is named nowhere in ``src/``: registered with one line (the tests put it in ``ENGINES``), it passes the
engine contract suite and runs through ``maximus run -e mini`` end to end, which shows that generic code asks
the engine for its capabilities and options instead of checking names. Its SQL is SQLite's, so its dialect
is named so: the workloads choose their statements by dialect, not by engine.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Iterable, Sequence

from maximus.engines.base import Capabilities, Dialect, Engine, Session
from maximus.engines.sqlite import SQLiteSession
from maximus.knobs import Applies, Choice, Integer, Knob, KnobCatalogue
from maximus.records import ENGINE_CHECK, ENGINE_CLAUSE, CheckResult, Outcome

MINI_KNOBS = KnobCatalogue("mini", [
    Knob("synchronous", Choice(("off", "normal", "full"), {"0": "off", "1": "normal", "2": "full"}), "full",
         Applies.CONNECTION, "How hard commits are flushed.", weakens_durability_when=frozenset({"off"})),
    Knob("busy_timeout", Integer(0, 60_000), "10000", Applies.CONNECTION, "How long a lock is waited for.",
         unit="ms"),
])
_REPORTED = {0: "off", 1: "normal", 2: "full"}


class MiniEngine(Engine):
    name = "mini"
    knobs = MINI_KNOBS
    capabilities = Capabilities(single_writer=True, server_process=False, server_side_procedures=False)
    dialect = Dialect("sqlite", exact_decimals=False, utc_now="strftime('%Y-%m-%d %H:%M:%f', 'now')")
    lock_wait_knob = "busy_timeout"
    example_knob = ("synchronous", "normal", "normal")

    @classmethod
    def driver_error(cls) -> type[Exception]:
        return sqlite3.Error

    @property
    def path(self) -> Path:
        return self.workdir / f"{self.database}.mini"

    @property
    def pristine(self) -> Path:
        return self.workdir / f"{self.database}.mini-pristine"

    def provision(self) -> None:
        self.destroy()
        self.workdir.mkdir(parents=True, exist_ok=True)
        sqlite3.connect(self.path).close()

    def exists(self) -> bool:
        return self.path.exists()

    def database_bytes(self, session: Session) -> int:
        return self.path.stat().st_size

    def destroy(self) -> None:
        self.path.unlink(missing_ok=True)

    def connect(self) -> SQLiteSession:
        settings = self.effective_settings
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                     timeout=int(settings["busy_timeout"]) / 1000)
        connection.execute(f"PRAGMA synchronous = {settings['synchronous']}")
        return SQLiteSession(connection)

    def integrity_check(self, session: Session) -> list[CheckResult]:
        (verdict,) = session.fetchone("PRAGMA quick_check") or ("no answer",)
        return [CheckResult(ENGINE_CHECK, ENGINE_CLAUSE, "PRAGMA quick_check", verdict == "ok",
                            "" if verdict == "ok" else verdict)]

    def reported_settings(self, session: Session) -> dict[str, str]:
        assert isinstance(session, SQLiteSession)
        (synchronous,) = session.connection.execute("PRAGMA synchronous").fetchone()
        return {"synchronous": _REPORTED[synchronous]}

    def bulk_insert(self, session: Session, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        assert isinstance(session, SQLiteSession)
        marks = ", ".join("?" * len(columns))
        session.connection.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def classify(self, error: BaseException) -> Outcome:
        busy = isinstance(error, sqlite3.OperationalError) and "locked" in str(error)
        return Outcome.RETRY if busy else Outcome.FAILED

    def snapshot(self) -> None:
        shutil.copyfile(self.path, self.pristine)

    def has_snapshot(self) -> bool:
        return self.pristine.exists()

    def restore(self) -> None:
        shutil.copyfile(self.pristine, self.path)

    def discard_build(self) -> None:
        self.destroy()
        self.pristine.unlink(missing_ok=True)

    def version(self) -> str:
        return sqlite3.sqlite_version

    def data_path(self) -> Path:
        return self.workdir
