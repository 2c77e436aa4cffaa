"""The recorder's runs of committed transactions: the samples the parent makes of them, and their facts."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

from maximus.driver.collected import Collected
from maximus.driver.retry import Result
from maximus.driver.terminal import Recorder, Terminal, finish
from maximus.records import Outcome, Window


class Counted:
    """A transaction whose input is a number of lines; its facts count the transactions and the lines."""

    def __init__(self, name: str) -> None:
        self.name = name

    def summed_facts(self, inputs: list[int]) -> dict[str, int]:
        return {"transactions": len(inputs), "lines": sum(inputs)}


ORIGIN = 1000.0
WINDOW = Window(10.0, 20.0)


def _recorded(runs: list[tuple[int, list[tuple[Counted, int]], list[float]]]) -> tuple[list, dict[str, int]]:
    """Each run recorded as a terminal's: (terminal, drawn, times from the origin); the samples and facts
    the parent gets from the recorder's messages."""
    outbox: list = []
    outbox_put = type("Outbox", (), {"put": staticmethod(outbox.append)})()
    recorder = Recorder(outbox_put, WINDOW, ORIGIN)
    for terminal, drawn, times in runs:
        recorder.record_committed(terminal, [t.name for t, _ in drawn], [ORIGIN + t for t in times], drawn)
    recorder.flush(ORIGIN + 30)
    collected = Collected()
    for message in outbox:
        collected.add(message[1], message[3], ORIGIN)
    samples = list(collected.samples())
    facts: dict[str, int] = {}
    for message in outbox:
        for name, value in message[2].items():
            facts[name] = facts.get(name, 0) + value
    return samples, facts


def test_a_run_becomes_one_committed_sample_per_transaction_timed_by_its_own_call() -> None:
    a, b = Counted("a"), Counted("b")
    samples, _ = _recorded([(3, [(a, 1), (b, 2), (a, 3)], [11.0, 11.5, 11.5, 12.25, 12.25, 13.0])])
    assert [(s.terminal, s.transaction, s.start, s.latency, s.outcome, s.attempts, s.error) for s in samples] == [
        (3, "a", 11.0, 0.5, Outcome.COMMITTED, 1, ""), (3, "b", 11.5, 0.75, Outcome.COMMITTED, 1, ""),
        (3, "a", 12.25, 0.75, Outcome.COMMITTED, 1, "")]


def test_facts_count_only_the_transactions_wholly_in_the_window_whatever_the_run() -> None:
    """Runs before the window, across its start, inside it, across its end and after it: each
    transaction's facts count when its whole response time is in the window (5.4), by type."""
    a, b = Counted("a"), Counted("b")
    runs = [
        (0, [(a, 100), (b, 100)], [1.0, 2.0, 2.0, 3.0]),  # before
        (0, [(a, 1000), (a, 1), (b, 2)], [9.0, 10.5, 10.5, 11.0, 11.0, 12.0]),  # the first starts before 10
        (1, [(a, 4), (b, 8), (b, 16)], [12.0, 13.0, 13.0, 14.0, 14.0, 15.0]),  # inside
        (1, [(a, 32), (b, 2000)], [18.0, 19.0, 19.0, 20.5]),  # the last ends after 20
        (2, [(a, 3000)], [25.0, 26.0]),  # after
    ]
    samples, facts = _recorded(runs)
    assert len(samples) == 11
    assert facts == {"a.transactions": 3, "a.lines": 1 + 4 + 32, "b.transactions": 3, "b.lines": 2 + 8 + 16}
    in_window = [s for s in samples if WINDOW.contains(s)]
    assert sorted(s.transaction for s in in_window) == ["a", "a", "a", "b", "b", "b"]


def test_runs_are_flushed_when_enough_transactions_are_waiting() -> None:
    outbox: list = []
    recorder = Recorder(type("Outbox", (), {"put": staticmethod(outbox.append)})(), WINDOW, ORIGIN,
                        last_flush=ORIGIN + 12)
    a = Counted("a")
    for n in range(40):  # 64 transactions a run, all within the same 0.1 s: only their number flushes them
        recorder.record_committed(0, ["a"] * 64, [ORIGIN + 12 + n * 0.001] * 128, [(a, 1)] * 64)
    assert outbox and all(sum(len(r[1]) for r in m[3]) >= 2000 for m in outbox)
    assert sum(len(r[1]) for m in outbox for r in m[3]) + recorder.recorded == 40 * 64


def _busy_batch(record_one_each: bool) -> tuple[list, dict[str, int], list[int]]:
    """A busy terminal's batch (``Terminal._finish_batch``): committed at the first attempt, retried, rolled back,
    failed, across the window's start and its end; the samples, facts and live counters it leaves, each transaction
    recorded as a sample of its own (``finish``, as before) or as the terminal records them."""
    a, b = Counted("a"), Counted("b")
    outcomes = [(Outcome.COMMITTED, 1), (Outcome.COMMITTED, 2), (Outcome.ROLLED_BACK, 1), (Outcome.FAILED, 3)]
    done = [((a, b)[n % 2], n + 1, ORIGIN + 9.0 + 0.5 * n, ORIGIN + 9.4 + 0.5 * n,
             Result(*outcomes[n % 7 % 4], "gone" if n % 7 % 4 == 3 else "")) for n in range(26)]
    outbox: list = []
    terminal = SimpleNamespace(index=2, emulator=SimpleNamespace(headline="a"), counters=[0] * 6,
                               recorder=Recorder(type("Outbox", (), {"put": staticmethod(outbox.append)})(),
                                                 WINDOW, ORIGIN))
    if record_one_each:
        for transaction, inputs, started, finished, result in done:
            finish(terminal, transaction, inputs, started, finished, result)
    else:
        Terminal._finish_batch(terminal, done)  # type: ignore[arg-type]  # what it reads of a terminal
    terminal.recorder.flush(ORIGIN + 30)
    collected, facts = Collected(), Counter[str]()
    for message in outbox:
        collected.add(message[1], message[3], ORIGIN)
        facts.update(message[2])
    return list(collected.samples()), dict(facts), terminal.counters


def test_a_busy_batch_records_what_a_sample_each_would() -> None:
    """Its transactions committed at the first attempt travel as one run, the others as samples of their own: the
    same samples (in the order of their starts), facts and counters either way."""
    samples, facts, counters = _busy_batch(record_one_each=False)
    assert (samples, facts, counters) == _busy_batch(record_one_each=True)
    assert len(samples) == 26 and {s.outcome for s in samples} == {Outcome.COMMITTED, Outcome.ROLLED_BACK,
                                                                    Outcome.FAILED}
    assert facts["a.transactions"] > 0 and facts["b.lines"] > 0 and counters[4:] == [11, 22]
