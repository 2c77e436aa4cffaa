"""Pumps: one call in flight on each of several sessions, all driven from one process (driver.multiplexed).

A pump is given, for one session (its "slot"), a list of calls, each ``(sql, params)`` as
``Session.send_call`` takes them, or ``(sql, params, request)``: a call to queue (below). It sends them
one after another, each as soon as the previous one's result is in, and stops the slot, reporting an
event, when:

- ``DONE``: every call of the list is over (``index`` is the list's length);
- ``FAILED``: the call at ``index`` failed; ``error`` is the exception ``Session.call`` would raise;
- ``END``: the slot's end time had passed when the call at ``index`` was due. A call given with
  ``resend`` (the retry of a transaction already started) is sent first even after the end.

An event is ``(slot, kind, index, times, error)``. ``times`` holds ``started, finished`` for every call
completed since the slot was last given calls, in order; for ``FAILED``, the failed call's pair comes
last. A stopped slot does nothing until it is given calls again.

**The queue** (the driver's deferred transactions, 2.7.2). One slot may be made the queue slot
(``queue_on``). A call to queue that another slot reaches is not sent there: ``(sql, params, request,
queued at)`` is appended to the queue slot's list, the call counts as over at once (its times are
``queued at`` twice), and the slot goes on with its next call. Given its list like any slot (``give``),
the queue slot sends its calls in order as the list grows: at its end it waits for the next one instead
of reporting ``DONE``, and ``progress`` hands over the times of the calls it completed since it was last
asked. It stops on ``FAILED`` and ``END`` like any slot, and queued calls wait in its list until it is
given them again. So a deferred transaction costs the driver's Python code no event of its own. The
first value of each call the queue slot completes (what ``Session.call`` returns) is kept, in order,
until ``values`` hands it over: a deferred transaction's result (2.7.2.3).

Between two events the driver's Python code does not run. ``PythonPump`` works on any engine with
split calls (``Capabilities.split_calls``); an engine can offer a cheaper pump of the same behaviour
(``Engine.call_pump``: PostgreSQL's is written in C over libpq, ``_libpq_pump.c``).
"""

from __future__ import annotations

import os
import select
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from maximus.engines.session import Session

DONE, FAILED, END = 0, 2, 3

Event = tuple[int, int, int, list, Any]  # slot, kind, index, times, error


class Pump(Protocol):
    def add(self, session: Session) -> int:
        """Take a session in; returns its slot."""

    def give(self, slot: int, calls: list, start: int, end: float, resend: bool = False) -> list[Event]:
        """Send ``calls[start:]`` one after another until one of the events above (a slot's first call
        may stop it at once, hence the events returned)."""

    def wait(self, timeout_s: float) -> list[Event]:
        """Run the slots' calls until at least one event, or for ``timeout_s`` at most."""

    def queue_on(self, slot: int, queue: list) -> None:
        """Make ``slot`` the queue slot, whose calls are queued in ``queue``; it runs them once given it."""

    def progress(self, slot: int) -> list[float]:
        """The times of the calls ``slot`` completed since it was last given calls or asked."""

    def values(self, slot: int) -> list[Any]:
        """The queue slot: the first values of the calls it completed since it was last asked; empty for
        any other slot."""

    def end_all(self, end: float) -> None:
        """From now on no slot sends a call after ``end`` (a stop)."""

    def in_flight(self) -> int:
        """Slots with a call in flight."""


@dataclass
class _Slot:
    session: Session
    socket: int
    calls: Sequence[Any] = ()
    next: int = 0
    current: int = -1
    started: float = 0.0
    end: float = 0.0
    times: list = field(default_factory=list)


class PythonPump:
    """The pump in Python: poll(2) over the sessions' sockets, ``send_call`` and ``call_finished``."""

    def __init__(self) -> None:
        self._slots: list[_Slot] = []
        self._by_socket: dict[int, int] = {}
        self._poller = select.poll()
        self._queue_slot = -1
        self._queue: list | None = None
        self._values: list[Any] = []  # of the queue slot's calls

    def add(self, session: Session) -> int:
        self._slots.append(_Slot(session, session.fileno()))
        return len(self._slots) - 1

    def give(self, slot: int, calls: list, start: int, end: float, resend: bool = False) -> list[Event]:
        state = self._slots[slot]
        if state.current >= 0:
            raise RuntimeError("the slot has a call in flight")
        state.calls, state.next, state.end, state.times = calls, start, end, []
        events: list[Event] = []
        self._send_next(slot, events, resend)
        return events

    def wait(self, timeout_s: float) -> list[Event]:
        events: list[Event] = []
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while self._by_socket:
            left = deadline - time.monotonic()
            for socket, _ in self._poller.poll(max(left, 0.0) * 1000.0):
                self._collect(self._by_socket[socket], events)
            if events or left <= 0:
                break
        return events

    def queue_on(self, slot: int, queue: list) -> None:
        if self._queue is not None or not 0 <= slot < len(self._slots):
            raise ValueError("no such slot, or the pump has a queue slot already")
        self._queue_slot, self._queue = slot, queue

    def progress(self, slot: int) -> list[float]:
        state = self._slots[slot]
        times, state.times = state.times, []
        return times

    def values(self, slot: int) -> list[Any]:
        if slot != self._queue_slot:
            return []
        values, self._values = self._values, []
        return values

    def end_all(self, end: float) -> None:
        for state in self._slots:
            state.end = min(state.end, end)

    def in_flight(self) -> int:
        return len(self._by_socket)

    def _send_next(self, slot: int, events: list[Event], resend: bool = False) -> None:
        state = self._slots[slot]
        while True:
            index = state.next
            if index >= len(state.calls):
                if slot == self._queue_slot:  # waits for the next queued call
                    return self._unregister(state)
                return self._stop(slot, DONE, index, events)
            now = time.monotonic()
            if not resend and now >= state.end:
                return self._stop(slot, END, index, events)
            call = state.calls[index]
            if not (isinstance(call, tuple) and len(call) == 3) or slot == self._queue_slot:
                break
            try:
                self._queue_call(state, call, now, events)
            except Exception as error:
                state.times += (now, time.monotonic())
                return self._stop(slot, FAILED, index, events, error)
            state.next, resend = index + 1, False
        try:
            state.session.send_call(*call[:2])
        except Exception as error:  # a connection that cannot send fails the call like a server error
            state.times += (now, time.monotonic())
            return self._stop(slot, FAILED, index, events, error)
        state.current, state.started = index, now
        if state.socket not in self._by_socket:
            self._by_socket[state.socket] = slot
            self._poller.register(state.socket, select.POLLIN)

    def _queue_call(self, state: _Slot, call: tuple, now: float, events: list[Event]) -> None:
        if self._queue is None:
            raise TypeError("a call to queue needs a queue slot (queue_on)")
        self._queue.append((*call, now))
        state.times += (now, now)
        runner = self._slots[self._queue_slot]
        if runner.calls and runner.current < 0:  # waiting for a queued call: this one
            self._send_next(self._queue_slot, events)

    def _collect(self, slot: int, events: list[Event]) -> None:
        state = self._slots[slot]
        try:
            if not state.session.call_finished():
                return
        except Exception as error:
            state.times += (state.started, time.monotonic())
            return self._stop(slot, FAILED, state.current, events, error)
        state.times += (state.started, time.monotonic())
        if slot == self._queue_slot:
            self._values.append(state.session.call_value())
        state.next, state.current = state.current + 1, -1
        self._send_next(slot, events)

    def _stop(self, slot: int, kind: int, index: int, events: list[Event], error: Any = None) -> None:
        state = self._slots[slot]
        events.append((slot, kind, index, state.times, error))
        state.calls, state.current, state.times = (), -1, []
        self._unregister(state)

    def _unregister(self, state: _Slot) -> None:
        if self._by_socket.pop(state.socket, None) is not None:
            self._poller.unregister(state.socket)


class CPump:
    """A pump in C (``_pump_core.h`` with an engine's driver over its client library), its failures made the
    exceptions the engine's Python driver raises (``error``): the C code reports them as plain tuples. The engine's
    sessions give the C pump what it needs with ``pump_handle()``: the connection's address in the library, the
    statements' forms by SQL text (a dict the pump reads) and what makes one."""

    def __init__(self, pump: Any) -> None:
        self._pump = pump
        self._sessions: list[Session] = []  # by slot
        self.end_all, self.in_flight, self.queue_on, self.progress, self.values = \
            pump.end_all, pump.in_flight, pump.queue_on, pump.progress, pump.values

    def add(self, session: Any) -> int:  # an engine's session that has ``pump_handle()``
        slot = self._pump.add(*session.pump_handle())
        self._sessions.append(session)
        return slot

    def give(self, slot: int, calls: list, start: int, end: float, resend: bool = False) -> list[Event]:
        return self._with_errors(self._pump.give(slot, calls, start, end, resend))

    def wait(self, timeout_s: float) -> list[Event]:
        return self._with_errors(self._pump.wait(timeout_s))

    def error(self, session: Any, reported: tuple) -> Exception:
        """The exception for a failure the C pump reported on ``session``'s connection (one of its engine's)."""
        raise NotImplementedError

    def _with_errors(self, events: list[Event]) -> list[Event]:
        for n, (slot, kind, index, times, error) in enumerate(events):
            if kind == FAILED and isinstance(error, tuple):
                events[n] = (slot, kind, index, times, self.error(self._sessions[slot], error))
        return events


def loaded_library(prefixes: tuple[str, ...]) -> Any | None:
    """The client library a Python driver loaded, as a ``ctypes.CDLL``: the one library mapped in this process whose
    file name starts with one of ``prefixes``, so that a connection is handled by the library that made it. None when
    there is not exactly one such library."""
    import ctypes

    try:
        with open("/proc/self/maps") as maps:
            paths = {fields[5] for fields in map(str.split, maps)
                     if len(fields) >= 6 and os.path.basename(fields[5]).startswith(prefixes)}
    except OSError:  # not Linux
        return None
    return ctypes.CDLL(paths.pop()) if len(paths) == 1 else None  # already loaded: the same handle, no second copy


def library_functions(prefixes: tuple[str, ...], names: Sequence[str]) -> tuple[int, ...] | None:
    """The addresses of the functions ``names`` in the client library a Python driver loaded (``loaded_library``).
    None when there is not exactly one such library, or it lacks one of the functions."""
    import ctypes

    library = loaded_library(prefixes)
    if library is None:
        return None
    try:
        addresses = [ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in names]
    except AttributeError:
        return None
    return None if None in addresses else tuple(address for address in addresses if address is not None)
