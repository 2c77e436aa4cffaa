"""Many terminals in one worker process: asyncio tasks, each with its own asynchronous session.

Used for engines with asynchronous sessions when every transaction is a single statement (server-side
stored functions), so a thousand keyed terminals with think times fit in a few processes. The
terminal's rules are those of ``terminal.Terminal``: keying time, transaction, think time; the same
samples, facts, live counters and deferred queue.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from maximus.driver.retry import Result, RetryPolicy, failed
from maximus.driver.terminal import Recorder, finish, queue_deferred
from maximus.engines.base import AsyncSession, Engine
from maximus.records import Outcome

_STOP_POLL_S = 0.25


@dataclass
class AsyncTerminal:
    index: int
    emulator: Any
    session: AsyncSession
    engine: Engine
    recorder: Recorder
    end: float  # monotonic time after which no transaction starts
    retry: RetryPolicy
    counters: Any
    delivery_queue: Any
    stop: Any  # multiprocessing event

    async def run(self) -> None:
        while time.monotonic() < self.end and not self.stop.is_set():
            transaction, inputs = self.emulator.next()
            if not await self._sleep(self.emulator.keying_time(transaction.name)):
                break
            await self._one(transaction, inputs)
            if not await self._sleep(self.emulator.think_time(transaction.name)):
                break

    async def _sleep(self, seconds: float) -> bool:
        """Keying or think time, cut short at the end of the run or a stop: False when the terminal is done."""
        deadline = min(time.monotonic() + seconds, self.end)
        while (remaining := deadline - time.monotonic()) > 0:
            if self.stop.is_set():
                return False
            await asyncio.sleep(min(remaining, _STOP_POLL_S))
        return not self.stop.is_set() and time.monotonic() < self.end

    async def _one(self, transaction: Any, inputs: Any) -> None:
        started = time.monotonic()
        if transaction.deferred:
            result = queue_deferred(self, transaction, inputs, started)
        else:
            result = await self._execute(transaction, inputs)
        finish(self, transaction, inputs, started, time.monotonic(), result)

    async def _execute(self, transaction: Any, inputs: Any) -> Result:
        sql, params = transaction.statement(inputs)
        for number in range(1, self.retry.max_attempts + 1):
            try:
                await self.session.execute(sql, params)
                return Result(Outcome.COMMITTED, number)
            except Exception as error:  # classified: a failure is counted, never swallowed
                if transaction.rolled_back_by_rule(error):
                    return Result(Outcome.ROLLED_BACK, number)
                wait = self.retry.backoff(error, number, self.engine.classify)
                if wait is None:
                    return failed(error, number)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")


async def run_terminals(terminals: list[AsyncTerminal]) -> None:
    await asyncio.gather(*(terminal.run() for terminal in terminals))
