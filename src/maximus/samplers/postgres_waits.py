"""Wait events of a PostgreSQL server's sessions, sampled: ``pg_stat_activity`` ``WAIT_SAMPLES_PER_S`` times a
second, by a thread of the PostgreSQL sampler (``samplers/postgres.py``) with its own connection."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from maximus.samplers.base import Reading

WAIT_SAMPLES_PER_S = 10.0


@dataclass(frozen=True)
class WaitCounts:
    """What the wait sampler has seen since it started."""

    snapshots: int
    active: int  # active client backends seen, summed over snapshots
    events: Mapping[str, int]  # of those, seen waiting, by ``type:name``
    cpu_s: float  # the sampling thread's own CPU time


WAIT_QUERY = ("SELECT wait_event_type, wait_event, count(*) FROM pg_stat_activity "
              "WHERE datname = $1 AND backend_type = 'client backend' AND state = 'active' "
              "AND pid <> ALL($2::int[]) GROUP BY 1, 2")
_WAIT_STATEMENT = b"maximus_wait_snapshot"


class WaitSampler:
    """Snapshots of ``pg_stat_activity`` at a fixed rate, in a thread with its own connection.

    The monitor reads counters once a second; a wait lasts from microseconds to milliseconds, so one
    look a second would see too few of them. Each snapshot counts the run database's active client
    backends and what each waits for; the shares of the samples estimate the shares of time.

    A snapshot is one libpq call (``exec_prepared``) of a statement prepared once, with its parameters in
    text, not psycopg's ``execute``: the thread sleeps between two snapshots, so each one runs with the
    caches cold, ten times a second on the CPUs the run shares: through ``execute`` a snapshot costs the
    thread about twice the CPU (bench/README.md).
    """

    def __init__(self, connection: Any, database: str, excluded_pids: Sequence[int],
                 per_second: float = WAIT_SAMPLES_PER_S) -> None:
        self._connection = connection
        from psycopg.pq import ExecStatus

        self._succeeded = (ExecStatus.COMMAND_OK, ExecStatus.TUPLES_OK)
        self._encoding = connection.info.encoding  # the session's client_encoding, as psycopg names it
        self._parameters = [database.encode(self._encoding),
                            ("{" + ",".join(map(str, excluded_pids)) + "}").encode(self._encoding)]
        self._interval_s = 1.0 / per_second
        self._lock = threading.Lock()
        self._counts = WaitCounts(0, 0, {}, 0.0)
        self._error: Exception | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="maximus-pg-waits", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def counts(self) -> WaitCounts:
        """The counts so far; raises what stopped the thread, so the failure is not mistaken for no waits."""
        with self._lock:
            if self._error is not None:
                raise RuntimeError(f"wait-event sampling stopped: {type(self._error).__name__}: {self._error}")
            return self._counts

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        self._connection.close()

    def _run(self) -> None:
        due = time.monotonic()
        try:
            self._result(self._connection.pgconn.prepare(_WAIT_STATEMENT, WAIT_QUERY.encode()))
            while not self._stopping.wait(max(0.0, due - time.monotonic())):
                self._add(self._snapshot())
                due = max(due + self._interval_s, time.monotonic())  # a slow snapshot skips, never bunches
        except Exception as error:  # reported by the next counts(), from the monitor's thread
            with self._lock:
                self._error = error

    def _snapshot(self) -> list[tuple[str | None, str | None, int]]:
        result = self._result(self._connection.pgconn.exec_prepared(_WAIT_STATEMENT, self._parameters))
        text = self._text
        return [(text(result.get_value(row, 0)), text(result.get_value(row, 1)), int(result.get_value(row, 2)))
                for row in range(result.ntuples)]

    def _text(self, value: bytes | None) -> str | None:
        return None if value is None else value.decode(self._encoding)

    def _result(self, result: Any) -> Any:
        """``result``, or the exception psycopg would have raised for it."""
        if result.status not in self._succeeded:
            from psycopg import errors

            raise errors.error_from_result(result, encoding=self._encoding)
        return result

    def _add(self, rows: Sequence[tuple[str | None, str | None, int]]) -> None:
        events = dict(self._counts.events)
        for kind, name, count in rows:
            if name is not None:
                event = f"{kind}:{name}"
                events[event] = events.get(event, 0) + count
        with self._lock:
            self._counts = WaitCounts(self._counts.snapshots + 1, self._counts.active + sum(r[2] for r in rows),
                                      events, time.thread_time())


def wait_readings(counts: WaitCounts) -> list[Reading]:
    return [Reading("activity_snapshots_total", counts.snapshots, "count"),
            Reading("active_backend_samples_total", counts.active, "count"),
            *(Reading("wait_samples_total", n, "count", {"event": event})
              for event, n in sorted(counts.events.items())),
            Reading("sampling_cpu_seconds_total", counts.cpu_s, "s")]
