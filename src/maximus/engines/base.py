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

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from maximus.knobs import KnobCatalogue
from maximus.records import Outcome

if TYPE_CHECKING:
    from maximus.engines.pump import Pump
    from maximus.samplers.base import Sampler


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do, so generic code can ask instead of checking names."""

    single_writer: bool  # one write transaction at a time (see Engine.gated)
    managed_server: bool  # Maximus starts and stops a server process
    server_side_procedures: bool
    async_sessions: bool = False  # connect_async(): many terminals share one process
    split_calls: bool = False  # Session.send_call / call_finished: busy terminals share one process


@dataclass(frozen=True)
class Dialect:
    """The small SQL differences a workload needs to know; statements are otherwise shared."""

    name: str
    clustered_table_suffix: str = ""  # appended to CREATE TABLE when a primary key clusters the rows
    for_update: str = ""  # appended to a SELECT that reads a row it will update
    primary_keys_after_load: bool = False  # add primary keys after the data (bulk loads are faster)
    # How ``Session.call`` takes its parameters. A workload converts them when it draws its inputs, a
    # batch at a time, not between two round trips (PostgreSQL: text, ready for libpq).
    call_parameters: Callable[[Sequence[Any]], Sequence[Any]] = tuple
    # Money (a NUMERIC with two decimals in the schema) as integer cents: for engines whose NUMERIC is binary
    # floating point (SQLite stores it as REAL), where sums of cents drift in their last bits.
    money_in_cents: bool = False
    # The current UTC date and time as SQL, with sub-second resolution: the one clock a workload's timestamps
    # come from, whichever side (driver or stored procedure) writes them.
    utc_now: str = "CURRENT_TIMESTAMP"
    # How ``Session.call`` returns an array of integers (the first value of a call's result): as a list
    array_of_ints: Callable[[Any], list[int | None]] = list


class Session(ABC):
    """One connection used by one terminal: SQL with ``?`` placeholders, explicit transactions."""

    @abstractmethod
    def begin(self, read_only: bool = False, one_snapshot: bool = False) -> None:
        """Start a transaction. ``one_snapshot``: every read of it must see the same committed state (a
        read-only transaction that reads several tables, TPC-C's Order-Status, 3.4.0.1); an engine whose
        default level gives each statement its own snapshot raises the level for this transaction."""

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None: ...

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed."""

    @abstractmethod
    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple | None: ...

    @abstractmethod
    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]: ...

    def batch(self, statements: Sequence[tuple[str, Sequence[Any]]], last: bool = False) -> list[list[tuple]]:
        """Run statements that do not wait for each other's results, in order, in the caller's transaction;
        return each one's rows (RETURNING's, for a change). A server engine sends them at once (PostgreSQL:
        one pipeline, one round trip), so a client-side transaction costs a round trip per batch, not per
        statement. The first error is raised once all have been sent; those after it did nothing.

        ``last``: the transaction's last statements. An engine may send its COMMIT with them, when all of them
        succeed; the ``commit()`` that follows then has nothing left to do."""
        return [self.fetchall(sql, params) for sql, params in statements]

    def call(self, sql: str, params: Sequence[Any]) -> Any:
        """Run one statement many times over (a stored-function call); return the first value of its
        first row, or None, in whatever form the engine's path gives it (``dialect.array_of_ints``
        reads an array of it).

        ``params`` come converted by the engine's ``dialect.call_parameters``. Engines with a cheaper
        path for a repeated statement (prepared once, parameters as text) override this; the driver's
        client cost per transaction is mostly spent here.
        """
        row = self.fetchone(sql, params)
        return None if row is None else row[0]

    # Engines with ``capabilities.split_calls`` also split ``call`` in two, so that one process can keep
    # calls in flight on several sessions and wait for whichever answers first (driver.multiplexed).

    def send_call(self, sql: str, params: Sequence[Any]) -> None:
        """Send what ``call`` sends and return at once; ``call_finished`` then collects the result."""
        raise NotImplementedError

    def call_finished(self) -> bool:
        """Read what has arrived without waiting: True once the call's result is complete, raising the
        call's error as ``call`` would; False while it is still running."""
        raise NotImplementedError

    def call_value(self) -> Any:
        """After ``call_finished`` said True: what ``call`` would have returned for that call."""
        raise NotImplementedError

    def fileno(self) -> int:
        """The socket that becomes readable when the server answers."""
        raise NotImplementedError

    def broken(self) -> bool:
        """Whether the connection is lost (the server or the network dropped it): nothing more can run."""
        return False

    def cancel(self) -> None:
        """From another thread: stop the statement this session is running, which then raises in its own
        thread. Best effort, and nothing on an engine that cannot (an embedded one)."""

    @abstractmethod
    def close(self) -> None: ...


class AsyncSession(ABC):
    """One connection of an asynchronous terminal: single statements in autocommit mode."""

    @abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...


class Engine(ABC):
    """A database management system under test, configured with validated knob settings."""

    name: ClassVar[str]
    knobs: KnobCatalogue  # per instance, from catalogue(); engines with a fixed one set it on the class
    capabilities: ClassVar[Capabilities]
    dialect: ClassVar[Dialect]
    connection_options: ClassVar[tuple[str, ...]] = ()  # the keys of ``connection`` it understands

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
    def documented_knobs(cls) -> list[str]:
        """Knob names the README must document (all of a fixed catalogue)."""
        return [knob.name for knob in cls.knobs]

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
        from maximus.engines.pump import PythonPump

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
