"""The Workload contract: schema and load, transactions, the mix, consistency and validity checks.

A workload is one package under ``workloads/``. The driver only sees ``TerminalPlan`` objects and the
transaction objects a workload hands it; it never branches on a workload's or a transaction's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar, Mapping

from maximus.engines.base import Dialect, Engine, Session


class Workload(ABC):
    name: ClassVar[str]
    transaction_names: ClassVar[tuple[str, ...]]

    @abstractmethod
    def load(self, engine: Engine, scale: int, seed: int, progress: Callable[[str, int], None]) -> Any: ...

    @abstractmethod
    def database_info(self, session: Session, dialect: Dialect) -> Any | None:
        """What the loaded database records about itself, or None when it is not a finished load that this
        version's transactions can run on in this dialect."""

    @abstractmethod
    def expected_rows(self, scale: int) -> Mapping[str, int]: ...

    @abstractmethod
    def transactions(self, dialect: Dialect, settings: Any = None) -> Mapping[str, Any]:
        """The transaction objects for this dialect, as the run's settings want them (e.g. server-side)."""

    @abstractmethod
    def check(self, session: Session, fresh: bool, dialect: Dialect) -> list[Any]: ...

    @abstractmethod
    def emulator(self, settings: Any, terminal: int, dialect: Dialect) -> Any:
        """The decisions of one terminal: ``next()`` -> (transaction, inputs), ``batch(n)`` -> the next n
        of them at once, ``pauses``, keying and think times."""
