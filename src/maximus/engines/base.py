"""The Engine contract: what Maximus needs from a database management system.

One file per engine implements it; generic code never branches on an engine's name, it asks for the
capabilities declared here. Engine objects are plain, picklable values: worker processes receive a
copy and call ``connect()`` themselves.

Contract (checked by ``tests/contracts/test_engines.py`` for every engine):
- ``knobs`` validates every setting before anything runs (``UserError`` with "did you mean").
- ``provision()`` creates an empty database with the creation-time knobs; idempotent ``destroy()``.
- ``connect()`` returns a ``Session`` with the connection-time knobs applied.
- ``classify(error)`` maps a driver exception to ``Outcome.RETRY`` or ``Outcome.FAILED``.
- ``snapshot()`` / ``restore()`` save and bring back the loaded database, so runs start alike;
  ``keep_as_pristine()`` saves it where the working copy is not needed until ``restore()``.
- ``samplers()`` returns the engine's own statistics samplers for a run (may be empty).
- ``watch()`` and ``fault(error)`` tell a run whose engine or data failed (a server gone, a file deleted,
  corrupt or on a full disk) from a measurement: such a run is failed, with the cause in one line.
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from maximus.engines.pump import Pump, PythonPump
from maximus.engines.session import AsyncSession, Session
from maximus.errors import UserError
from maximus.knobs import KnobCatalogue
from maximus.records import CheckResult, Outcome, StorageAccess

if TYPE_CHECKING:
    from maximus.samplers.base import Sampler


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, so generic code can ask instead of checking names."""

    single_writer: bool  # one write transaction at a time (see Engine.gated)
    server_process: bool  # the database runs in a server's processes, not inside Maximus's clients (embedded)
    server_side_procedures: bool
    async_sessions: bool = False  # connect_async(): many terminals share one process
    split_calls: bool = False  # Session.send_call / call_finished: busy terminals share one process


@dataclass(frozen=True)
class ConnectionOption:
    """How to reach or choose an engine's server, or what Maximus may do to it: a key of ``Engine.connection``,
    given on the command line as ``--`` and the name with dashes (``bin_dir``: ``--bin-dir``)."""

    name: str
    help: str  # the command line's help text
    kind: str = "text"  # text, path (a directory or file), or flag (on or off; on is "yes")
    implies: str | None = None  # the flag this one turns on as well

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Driver:
    """The Python package an engine's sessions need, one of Maximus's extras (``pip install 'maximus[extra]'``): only
    the engine imports it, when it is used, so the rest of Maximus installs and runs without it."""

    module: str  # what is imported: "MySQLdb"
    extra: str  # the extra of Maximus's that brings it: "mariadb"
    compiles_against: tuple[str, ...] = ()  # Debian's packages pip builds it with, where it has no wheel

    def missing(self, engine: str) -> str | None:
        """Why ``engine`` cannot run here, in one line, or None when its driver imports."""
        try:
            importlib.import_module(self.module)
        except ImportError as error:
            found = importlib.util.find_spec(self.module.split(".")[0]) is not None
            problem = f"cannot load its driver ({error})" if found else "needs its driver"
            return f"the {engine} engine {problem}: pip install 'maximus[{self.extra}]'{self._needs()}"
        return None

    def _needs(self) -> str:
        if not self.compiles_against:
            return ""
        packages = " ".join(self.compiles_against)
        return f" (it compiles against {self.compiles_against[0]}; apt-get install {packages})"


@dataclass(frozen=True)
class Dialect:
    """The facts of an engine's SQL that any workload needs; a workload writes its own statements per dialect
    (``name``), as it chooses."""

    name: str
    clustered_table_suffix: str = ""  # appended to CREATE TABLE when a primary key clusters the rows
    for_update: str = ""  # appended to a SELECT that reads a row it will update
    primary_keys_after_load: bool = False  # add primary keys after the data (bulk loads are faster)
    # How ``Session.call`` takes its parameters. A workload converts them when it draws its inputs, a
    # batch at a time, not between two round trips (PostgreSQL: text, ready for libpq).
    call_parameters: Callable[[Sequence[Any]], Sequence[Any]] = tuple
    # Whether NUMERIC(p, s) keeps decimal fractions exactly; SQLite's is binary floating point (REAL), where a
    # workload may keep amounts as integers (TPC-C: money in cents).
    exact_decimals: bool = True
    # The current UTC date and time as SQL, with sub-second resolution: the one clock a workload's timestamps
    # come from, whichever side (driver or stored procedure) writes them.
    utc_now: str = "CURRENT_TIMESTAMP"
    # The column type that holds ``utc_now``'s values to the microsecond, without a time zone.
    datetime_type: str = "TIMESTAMP"
    # How ``Session.call`` returns an array of integers (the first value of a call's result): as a list
    array_of_ints: Callable[[Any], list[int | None]] = list


class Engine(ABC):
    """A database management system under test, configured with validated knob settings."""

    name: ClassVar[str]
    knobs: KnobCatalogue  # per instance, from catalogue(); engines with a fixed one set it on the class
    capabilities: ClassVar[Capabilities]
    dialect: ClassVar[Dialect]
    connection_options: ClassVar[tuple[ConnectionOption, ...]] = ()  # the keys of ``connection`` it understands
    driver: ClassVar[Driver | None] = None  # an embedded engine's may come with Python (sqlite3)
    lock_wait_knob: ClassVar[str | None] = None  # the knob bounding a lock wait
    short_lock_wait: ClassVar[str] = "200"  # a value of it that ends a lock wait within about a second (200 ms)
    # A connection-time knob, a value other than its default, and that value as ``reported_settings`` gives it:
    # the contract suite checks with it that the knobs reach the engine.
    example_knob: ClassVar[tuple[str, str, str] | None] = None

    def __init__(self, workdir: Path, database: str, settings: Mapping[str, object] | None = None,
                 connection: Mapping[str, str] | None = None) -> None:
        self.workdir = Path(workdir)
        self.database = database
        self.connection = dict(connection or {})  # engine-specific: a DSN, a binary directory, ...
        self.knobs = self.catalogue_for(settings or {}, self.connection)
        self.settings = self.knobs.resolve(settings or {})

    @classmethod
    def catalogue(cls, connection: Mapping[str, str]) -> KnobCatalogue:
        """The knobs this engine accepts. A fixed catalogue is the class attribute ``knobs``; a server
        engine may ask the server itself which settings it has."""
        return cls.knobs

    @classmethod
    def catalogue_for(cls, settings: Mapping[str, object], connection: Mapping[str, str]) -> KnobCatalogue:
        """The catalogue that validates ``settings``: where a knob chooses the server itself (PostgreSQL's
        ``bin_dir``), the other knobs are that server's."""
        return cls.catalogue(connection)

    @classmethod
    def require_driver(cls) -> None:
        """Refuse, in one line, an engine whose driver is not installed, before anything runs."""
        problem = cls.driver.missing(cls.name) if cls.driver else None
        if problem:
            raise UserError(problem)

    @classmethod
    def driver_error(cls) -> type[Exception]:
        """The base class of the errors its sessions raise (imported when asked: the driver may be large)."""
        return Exception

    @classmethod
    def documented_knobs(cls) -> list[str]:
        """Knob names the README must document (all of a fixed catalogue)."""
        return [knob.name for knob in cls.knobs]

    @classmethod
    def manages_server_for(cls, connection: Mapping[str, str]) -> bool:
        """Whether an engine of this class reached by ``connection`` runs a server Maximus starts and stops: known
        before it is made (a server of the user's is asked for its catalogue as it is made)."""
        return False

    @property
    def manages_server(self) -> bool:
        """Whether Maximus starts and stops this instance's server: not an embedded engine's (it has none), nor
        a server the user owns."""
        return False

    @property
    def effective_settings(self) -> dict[str, str]:
        """Every knob with the value the run uses (defaults filled in)."""
        return self.knobs.with_defaults(self.settings)

    def durability_warnings(self) -> list[str]:
        return self.knobs.durability_warnings(self.effective_settings)

    def gated(self, read_only: bool) -> bool:
        """Whether a transaction must queue at the driver's cross-process gate before it starts.

        Engines with one writer at a time queue writers there, fairly and without sleeping; engines
        whose readers also block writers queue readers too.
        """
        return False

    def call_pump(self) -> Pump:
        """What keeps the calls of several split-call sessions in flight from one process
        (engines/pump.py): the pump in Python, unless the engine has a cheaper one."""
        return PythonPump()

    def validate_run(self, terminals: int) -> None:
        """Raise UserError when these settings cannot serve ``terminals`` concurrent terminals."""

    def isolation(self, one_snapshot: bool, procedure: bool) -> str:
        """The isolation level a transaction runs at here: one begun with ``Session.begin(..., one_snapshot)``,
        or one stored-procedure call (``procedure``) in autocommit mode, which runs at the default level."""
        return "serializable"

    def one_connection(self) -> bool:
        """Whether these settings let a single connection use the database (SQLite's ``locking_mode=exclusive``):
        the run then does everything on its one terminal's connection, the deferred transactions included."""
        return False

    def watch(self) -> Callable[[], str | None]:
        """A probe, from now on, of what makes a run's figures meaningless: the server gone, the database file
        gone or replaced. It returns the cause in one line, None while all is well. The driver calls it about
        once a second during a run and once after it, so it is cheap: a stat, a pid, a few lines of a log."""
        return lambda: None

    def fault(self, error: str) -> str | None:
        """The cause in one line when a transaction's error (``Type: message``, as ``errors.describe`` writes
        it) means that the engine or its data can no longer serve the run: a full disk, a corrupt file, a lost
        server. None for an error of the transaction's own (a conflict, a constraint), which only the failure
        threshold counts."""
        return None

    def discard_build(self) -> None:
        """Remove what a build that did not finish left: the half-written database and any pristine copy (a
        partial one included), even on a full disk. ``destroy()`` unless the engine needs more."""
        self.destroy()

    @abstractmethod
    def provision(self) -> None:
        """Create an empty database with the creation-time knobs, replacing any previous one."""

    @abstractmethod
    def exists(self) -> bool: ...

    @abstractmethod
    def destroy(self) -> None: ...

    def start(self) -> None:
        """Start the server (no-op for embedded engines)."""

    def stop(self) -> None:
        """Stop the server (no-op for embedded engines); safe to call twice."""

    def database_bytes(self, session: Session) -> int:
        """How large the database is on disk, its indexes included: what fio's matching job reads over."""
        raise NotImplementedError(f"{self.name} does not say how large its database is")

    def storage_access(self) -> StorageAccess:
        """How this engine, with its settings, reads its data pages (fio's matching job is made from it)."""
        return StorageAccess(page_bytes=4096, direct=False)

    def crash(self) -> None:
        """SIGKILL every process of the server at once, as a crash ends them (a crash test): none may write another
        byte. An embedded engine has no process of its own: the crash test kills the processes holding its files."""
        raise UserError(f"{self.name} has no server of Maximus's to crash")

    def loss_window(self, mode: str) -> str:
        """What the engine's documentation says its settings may lose on a crash of ``mode`` ("process": the server
        killed; "power": the machine's power cut), in one phrase; "" when they are documented to lose nothing."""
        return ""

    @abstractmethod
    def connect(self) -> Session: ...

    async def connect_async(self) -> AsyncSession:
        """An asynchronous session (engines whose capabilities say ``async_sessions``)."""
        raise NotImplementedError(f"{self.name} has no asynchronous sessions")

    @abstractmethod
    def bulk_insert(self, session: Session, table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> None:
        """Append rows fast, inside the caller's transaction."""

    def bulk_insert_columns(self, session: Session, table: str, columns: Sequence[str],
                            values: Sequence[np.ndarray]) -> None:
        """Append rows given column by column, inside the caller's transaction.

        ``values`` holds one 1-D numpy array per column, all of one length: integers, floats, or text
        as bytes (``S`` dtype, UTF-8, trailing NULs are padding). A NULL is a masked entry of a
        ``numpy.ma.MaskedArray``. The rows stored are those ``bulk_insert(..., rows_of(values))`` stores,
        which is what this does; an engine may override it to build its bulk format from the arrays
        without a Python object per value.
        """
        self.bulk_insert(session, table, columns, rows_of(values))

    @abstractmethod
    def classify(self, error: BaseException) -> Outcome:
        """``Outcome.RETRY`` for a conflict worth retrying, ``Outcome.FAILED`` otherwise."""

    @abstractmethod
    def snapshot(self) -> None:
        """Save the loaded database as the pristine copy."""

    def keep_as_pristine(self) -> None:
        """Save a database just loaded as the pristine copy when no one needs the working one before
        ``restore()``: an engine that can move the data there instead of copying it saves a whole copy.
        Afterwards ``exists()`` may be false until ``restore()``."""
        self.snapshot()

    @abstractmethod
    def has_snapshot(self) -> bool: ...

    @abstractmethod
    def restore(self) -> None:
        """Replace the database with the pristine copy."""

    @abstractmethod
    def version(self) -> str: ...

    @abstractmethod
    def data_path(self) -> Path:
        """Where the data lives, for the environment fingerprint (filesystem, mount options)."""

    @abstractmethod
    def integrity_check(self, session: Session) -> list[CheckResult]:
        """The engine's own check of the database's storage, beside the workload's conditions: what a crash can
        break that no query of the workload shows (a torn page, an index that lost a row). Each a ``CheckResult``
        numbered from ``records.ENGINE_CHECK``, clause ``records.ENGINE_CLAUSE``; one the engine cannot run here
        is skipped (``passed`` None) with the reason."""

    def reported_settings(self, session: Session) -> dict[str, str]:
        """The settings as the engine itself reports them on a live session: proof the knobs took effect."""
        return {}

    def reported_otherwise(self, reported: Mapping[str, str]) -> list[str]:
        """A warning for each setting asked of the engine, the run's knobs and those fixed when the database was
        built, that ``reported_settings`` gives with another value: the engine did not take it as asked."""
        asked = {**self.creation_settings(), **self.settings}
        return [f"{name}={value} was asked, but {self.name} reports {reported[name]}" for name, value in asked.items()
                if name in reported and not self.knobs.get(name).means(value, reported[name])]

    def samplers(self) -> list[Sampler]:
        """Fresh samplers of the engine's own statistics for one run (none by default).

        They run in the parent process beside the OS sampler (see ``maximus.samplers.base``). A
        server engine's sampler also reports its server processes as the process group ``server``
        (``process_*{group=server}``), so the server's CPU is told from the client's.
        """
        return []

    def server_pid(self) -> int | None:
        """The main process of the server Maximus started for this run, whose children are the server's other
        processes; None for an embedded engine, a server of the user's, or a server that is not running."""
        return None

    def lock_target(self) -> tuple[Path, str] | None:
        """The file whose lock keeps a second Maximus off this engine's data while one uses it
        (``maximus.locks``), and what it guards, in words; None where the data is not Maximus's to guard."""
        return self.workdir / f"{self.database}.lock", f"the database {self.database} in {self.workdir}"

    def creation_settings(self) -> dict[str, str]:
        """The effective values of knobs that are fixed when the database is built."""
        return {k.name: self.effective_settings[k.name] for k in self.knobs if k.applies == "creation"}


def rows_of(values: Sequence[np.ndarray]) -> list[tuple]:
    """The rows of ``bulk_insert_columns``'s columns, as Python values (text as str, NULL as None)."""
    return list(zip(*(_python_values(column) for column in values)))


def _python_values(column: np.ndarray) -> list:
    if np.ma.isMaskedArray(column) and np.ma.getmaskarray(column).any():
        data = np.array(_python_values(np.ma.getdata(column)), dtype=object)
        data[np.ma.getmaskarray(column)] = None
        return data.tolist()
    column = np.ma.getdata(column)
    if column.dtype.kind == "S":
        try:
            return column.astype(f"U{column.dtype.itemsize}").tolist()  # one C cast while the text is ASCII
        except UnicodeDecodeError:
            return [text.decode() for text in column.tolist()]
    return column.tolist()
