"""The Workload contract: its settings, scale and database, transactions, checks and headline figure.

A workload is one package under ``workloads/``, registered with one line in ``workloads/__init__.py``.
Generic code (the run, the experiment file, analysis, the report, the exports) asks the workload and never
branches on a workload's or a transaction's name; the driver sees only the transaction objects and the
terminal emulators a workload hands it.

Contract (checked for every registered workload by ``tests/contracts/test_workloads.py``):
- ``settings(given)`` validates the workload's own settings (a mapping of plain values from the command line
  or the experiment file) into a frozen settings object, or raises ``SettingError`` naming the key;
  ``settings.to_mapping()`` gives them back as stored with every run.
- ``load()`` builds the database in an empty engine database and records what it built, so that
  ``database_info()`` can later tell a finished build of this version from anything else. A workload whose rows
  are mostly per home may also offer its build in parts (``split_load()``, a ``SplitLoad``), so that client hosts
  load their own homes' rows.
- ``transactions()`` and ``emulator()`` are what the driver runs; ``check()`` gives the database's
  consistency conditions, each a ``CheckResult``.
- ``headline`` names the figure of merit: completions of one transaction per minute of the measured window, or per
  second (``Headline.per_seconds``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Protocol, Sequence

from maximus.engines.base import Dialect, Engine, Session
from maximus import limits
from maximus.errors import UserError
from maximus.records import Band, Headline, Presentation, WorkloadReading
from maximus.records import BandResult as BandResult  # where workloads have always found it
from maximus.records import CheckResult, DeviceJob, DurabilityFindings, Outcome, StorageAccess

Progress = Callable[[str, int], None]  # (table, rows just written)


def tallied(rows: dict[str, int], progress: Progress) -> Progress:
    """``progress``, with the rows it is told also added up per table in ``rows``: what a build wrote."""
    def count(table: str, written: int) -> None:
        rows[table] = rows.get(table, 0) + written
        progress(table, written)
    return count


class SettingError(UserError):
    """A workload setting that is not valid; ``key`` names it, for the experiment file's or the CLI's message.
    A number outside its documented range carries the range (``limit``) and the ``value``."""

    def __init__(self, key: str, message: str, limit: limits.Limit | None = None, value: object = None) -> None:
        super().__init__(f"{key}: {message}")
        self.key, self.reason, self.limit, self.value = key, message, limit, value

    def for_option(self, flag: str) -> UserError:
        """The same error, as the command line's option ``flag`` gives it."""
        if self.limit is not None:
            return UserError(limits.out_of_range(flag, self.value, self.limit))
        return UserError(f"{flag}: {self.reason}")


class Settings(Protocol):
    """A workload's settings object: frozen, and stored with every run as the mapping it gives."""

    def to_mapping(self) -> dict[str, Any]: ...


class RunSettings(Protocol):
    """What every terminal of one run shares (``Workload.run_settings``), as the driver needs to know of it."""

    @property
    def server_side(self) -> bool:
        """Each transaction is one stored-procedure call."""

    @property
    def pauses(self) -> bool:
        """The terminals wait between transactions (keying and think times), or run back to back."""

    @property
    def one_call(self) -> bool:
        """Each transaction is one statement, sent as one call (``Session.call``: a stored-procedure call in
        server-side mode, a single read), with nothing of the client's to do between two: busy terminals can then
        share a process, the engine's pump sending their calls (``driver.multiplexed``)."""


@dataclass(frozen=True)
class LoadResult:
    scale: int
    seed: int
    seconds: float
    rows: dict[str, int]
    inputs: Any = None  # the workload's own, as ``DatabaseInfo.inputs`` reads them back


@dataclass(frozen=True)
class DatabaseInfo:
    """What a finished build records about itself."""

    scale: int
    seed: int
    load_seconds: float
    fresh: bool  # no run has changed it since the build
    creation_settings: dict[str, str]  # the engine's knobs fixed when it was built
    inputs: Any = None  # the workload's own: what a run's inputs depend on (TPC-C: the NURand C-Load)
    files: Path | None = None  # where the database's files lie on this machine, once it is prepared for a run


@dataclass(frozen=True)
class Homes:
    """What a workload's terminals are dealt over in turn: terminal i's home is the (i % count + 1)-th (TPC-C 4.2.2:
    its home warehouse). Several client hosts split the homes between them, so that no two hosts' terminals share
    one (``driver.hosts``)."""

    count: int
    unit: str  # what one is, in the plural: "warehouses"


class SplitLoad(ABC):
    """A build in parts, so that its bulk, the rows of each home (TPC-C: each warehouse's), can be loaded from other
    machines, each its own homes over its own connections to the server (``driver.hosts``): ``begin``, the shared
    rows and ``finish`` run where the build is run from; ``load_homes`` runs anywhere the object is sent (it is
    pickled there). The parts together write what ``Workload.load`` writes, row for row."""

    @property
    @abstractmethod
    def homes(self) -> Homes:
        """What the per-home rows are split by: the same homes the terminals are dealt over."""

    @abstractmethod
    def begin(self) -> None:
        """The empty database and its schema, before any row."""

    @abstractmethod
    def load_shared(self, progress: Progress) -> None:
        """The rows no home owns (TPC-C: the items); written while the homes are loaded."""

    @abstractmethod
    def load_homes(self, homes: Sequence[int], processes: int, progress: Progress) -> None:
        """The rows of ``homes`` (1-based), by up to ``processes`` processes of this machine."""

    @abstractmethod
    def finish(self, rows: Mapping[str, int]) -> LoadResult:
        """Once every row is in (``rows``: written per table): keys, indexes, statistics and the build's record,
        timed from the ``begin``."""


@dataclass(frozen=True)
class CommandLineSetting:
    """One of the workload's settings as an option of ``maximus run`` (and of ``load`` and ``check`` when it
    chooses which database is built): the command line offers it as declared, and the workload receives the
    value given under ``key``, as from an experiment file. Not given, the workload's default applies, which the
    help shows. A flag names one setting of one workload, and no option of the commands themselves."""

    key: str  # the setting it gives: "warehouses", one of ``Workload.setting_names``
    flag: str  # "--warehouses"; an on/off setting is offered as a pair, "--keying/--no-keying"
    type: type  # int, float, str, or bool (on or off)
    help: str  # one sentence without its full stop: the command line adds the default
    short: str | None = None  # "-w"
    chooses_database: bool = False  # the setting tells which database is built: ``load`` and ``check`` take it


class Workload(ABC):
    name: ClassVar[str]
    headline: ClassVar[Headline]
    reported_transactions: ClassVar[tuple[str, ...]]  # in the order tables show them, deferred ones included
    setting_names: ClassVar[tuple[str, ...]]  # the keys ``settings`` takes
    options: ClassVar[tuple[CommandLineSetting, ...]] = ()  # settings the command line offers
    # Its transactions can also run as stored-procedure calls, on engines that have them (``--transactions server``)
    server_side: ClassVar[bool] = False

    @abstractmethod
    def settings(self, given: Mapping[str, Any]) -> Settings:
        """``given`` validated, the rest defaulted; ``SettingError`` for an unknown key or a bad value."""

    @abstractmethod
    def presentation(self, settings: Any, terminals: int | None = None) -> Presentation:
        """How reports name runs of these settings with ``terminals`` at most (None: not known): benchmark label,
        whether it conforms, scale, transactions, limits."""

    @abstractmethod
    def scale(self, settings: Any) -> int:
        """How big the database is, in the workload's unit (TPC-C: warehouses): estimates and labels use it."""

    def homes(self, settings: Any) -> Homes | None:
        """What these settings' terminals are dealt over in turn (TPC-C: the warehouses), or None: a terminal has no
        home, and any of them can run on any client host."""
        return None

    @abstractmethod
    def database_name(self, settings: Any) -> str:
        """The name of the database these settings build (before any creation knob is added to it)."""

    @abstractmethod
    def load(self, engine: Engine, settings: Any, seed: int, progress: Progress) -> LoadResult: ...

    def split_load(self, engine: Engine, settings: Any, seed: int) -> SplitLoad | None:
        """The build of ``load`` in parts, its per-home rows loadable by client hosts; None: it is built in one
        piece, where the run is started from."""
        return None

    @abstractmethod
    def database_info(self, session: Session, dialect: Dialect) -> DatabaseInfo | None:
        """What the loaded database records about itself, or None when it is not a finished build that this
        version's transactions can run on in this dialect."""

    @abstractmethod
    def expected_rows(self, settings: Any) -> Mapping[str, int]:
        """Rows per table a build writes (for progress bars)."""

    def prepare(self, engine: Engine, session: Session, loaded_now: bool) -> None:
        """Before each run, on its restored database: e.g. install this version's stored procedures."""

    def mark_used(self, session: Session) -> None:
        """A run starts changing the database: ``DatabaseInfo.fresh`` is over."""

    @abstractmethod
    def run_settings(self, settings: Any, seed: int, info: DatabaseInfo, server_side: bool) -> RunSettings:
        """What every terminal of one run shares (handed to ``transactions`` and ``emulator``)."""

    def recorded_inputs(self, info: DatabaseInfo, run_settings: Any) -> Mapping[str, Any]:
        """What a run records of the inputs it drew from, beside its seed (TPC-C: the NURand constants)."""
        return {}

    @abstractmethod
    def transactions(self, dialect: Dialect, run_settings: Any = None) -> Mapping[str, Any]:
        """The transaction objects for this dialect, as the run's settings want them (e.g. server-side)."""

    @abstractmethod
    def emulator(self, run_settings: Any, terminal: int, dialect: Dialect) -> Any:
        """The decisions of one terminal: ``next()`` -> (transaction, inputs), ``batch(n)`` -> the next n
        of them at once, ``pauses``, keying and think times, ``headline``."""

    @abstractmethod
    def check(self, session: Session, fresh: bool, dialect: Dialect) -> list[CheckResult]: ...

    def warnings(self, settings: Any, terminals: int) -> list[str]:
        """What makes a run of these settings something less than the workload's specification asks."""
        return []

    def pauses(self, settings: Any) -> bool:
        """Whether these settings give the terminals keying and think times between transactions: a fixed rate
        (``--rate``) sets when each transaction starts instead, and is refused with them."""
        return False

    def validity_bands(self, settings: Any) -> Sequence[Band]:
        """The bands a valid run of these settings keeps its inputs in, as data (``maximus.records.Band``): its
        counts per transaction, its summed facts, its deferred transactions' records."""
        return ()

    def mix_bands(self) -> Sequence[Band]:
        """Each transaction's share of the run against its minimum, as bands."""
        return ()

    def reading(self, settings: Any, terminals: int | None) -> WorkloadReading:
        """What the read side needs to read a run of these settings, stored with the run: it asks no workload."""
        return WorkloadReading(self.presentation(settings, terminals), self.reported_transactions,
                               tuple(sorted(self.write_transactions())), tuple(self.validity_bands(settings)),
                               tuple(self.mix_bands()))

    @abstractmethod
    def write_transactions(self) -> set[str]:
        """Sample names of the transactions that commit changes, a deferred one under its completion's name: the
        same in every dialect, so reading a run's results needs no engine."""

    # Crash tests (TPC-C 3.5.4). A workload that keeps none of its transactions in a success log has no crash test.

    crash_testable: ClassVar[bool] = False

    def success_entry(self, transaction: str, outcome: Outcome, inputs: Any, output: Any) -> str | None:
        """The success log's line for a transaction whose ``outcome`` the terminal was just told (its ``inputs``, and
        what its last attempt returned), or None for one the log does not keep. One line, no newline."""
        return None

    def durability_baseline(self, session: Session) -> Any:
        """What the verification compares with, read from the database before the terminals start (JSON data)."""
        return None

    def verify_durability(self, session: Session, entries: Sequence[str], baseline: Any,
                          terminals: int) -> DurabilityFindings:
        """After a crash and the engine's recovery: which acknowledged commits of the success log ``entries`` are
        missing, and whether what the log says rolled back is absent, against ``baseline``; ``terminals``: how many
        transactions may have been in flight, committed but never acknowledged."""
        raise NotImplementedError(f"the {self.name} workload has no crash test")

    # Storage-bound workloads (issue #43): the device's own limit, measured by fio beside each run.

    def device_job(self, settings: Any, terminals: int, access: StorageAccess, data_bytes: int,
                   info: DatabaseInfo | None = None) -> DeviceJob | None:
        """The fio job that does what a run of these settings asks of the device, given how the engine reads
        (``access``), how large its data is (``data_bytes``) and what its build recorded (``info``: e.g. the bytes of
        the table a scan reads; None when only whether there is a job is asked, before the database exists); None
        for a workload that is not storage-bound."""
        return None
