"""TPC-C's durability test (clause 3.5.4): the client's success log of New-Orders, and the verification of a
recovered database against it.

The log keeps one line per New-Order the terminal was told the outcome of: ``committed W D O C N`` (warehouse,
district, order id, customer, order-line count) or ``rolled_back W D C N`` (the same without an order id: a
rolled-back New-Order has none the client was told). After the crash and the recovery the verification holds the
database to it, a few set-based queries per district: every acknowledged order is there and whole, none of the
rolled-back ones is, and the districts' D_NEXT_O_ID advanced by the surviving acknowledged orders plus at most one
order in flight per terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, NamedTuple, Sequence, TypeVar

from maximus.engines.base import Session
from maximus.records import CheckResult, DurabilityFindings, Outcome
from maximus.workloads.tpcc.consistency import SHOWN_VIOLATIONS
from maximus.workloads.tpcc.server_side import Call

CLAUSE = "3.5.4"
# The verification's conditions, numbered after the workload's (1..12) and the engine's integrity check (100+)
WHOLE_CONDITION = 201
ROLLED_BACK_CONDITION = 202
COUNTER_CONDITION = 203

COMMITTED, ROLLED_BACK = "committed", "rolled_back"  # the log's first word


class CommittedOrder(NamedTuple):
    """An acknowledged New-Order, as the success log names it."""

    w_id: int
    d_id: int
    o_id: int
    c_id: int
    ol_cnt: int

    def __str__(self) -> str:
        return " ".join(map(str, (COMMITTED, *self)))


class RolledBackOrder(NamedTuple):
    """A New-Order rolled back by its rule (2.4.2.3), as the success log names it: its lines' count includes the
    unused item's."""

    w_id: int
    d_id: int
    c_id: int
    ol_cnt: int

    def __str__(self) -> str:
        return " ".join(map(str, (ROLLED_BACK, *self)))


Entry = CommittedOrder | RolledBackOrder
_KINDS: dict[str, type[CommittedOrder] | type[RolledBackOrder]] = {COMMITTED: CommittedOrder,
                                                                    ROLLED_BACK: RolledBackOrder}


def success_entry(transaction: str, outcome: Outcome, inputs: Any, output: Any) -> str | None:
    """The log's line for a New-Order that committed or rolled back by its rule; None for anything else."""
    if transaction != "new_order":
        return None
    if outcome is Outcome.COMMITTED:
        if output is None or not hasattr(output, "o_id"):
            # Without the screen the order's id is unknown, and a log missing acknowledged orders proves nothing.
            raise ValueError("a committed New-Order's success entry needs its screen (the order id)")
        return str(CommittedOrder(output.w_id, output.d_id, output.o_id, output.c_id, output.o_ol_cnt))
    if outcome is Outcome.ROLLED_BACK:
        order = inputs.inputs if isinstance(inputs, Call) else inputs  # server-side mode draws a call around it
        return str(RolledBackOrder(order.w_id, order.d_id, order.c_id, len(order.item_ids)))
    return None


def parse_entry(line: str) -> Entry:
    """The entry ``success_entry`` wrote as ``line``; ValueError for a line it cannot have written."""
    try:
        kind, *numbers = line.split()
        return _KINDS[kind](*(int(number) for number in numbers))
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"not a TPC-C success log entry: {line!r}") from None


def durability_baseline(session: Session) -> list[list[int]]:
    """Each district's D_NEXT_O_ID, as ``[w_id, d_id, next_o_id]`` triples (JSON data)."""
    return [[int(w_id), int(d_id), int(next_o_id)] for w_id, d_id, next_o_id in _next_order_ids(session)]


def _next_order_ids(session: Session) -> list[tuple]:
    return session.fetchall("SELECT d_w_id, d_id, d_next_o_id FROM district ORDER BY d_w_id, d_id")


District = tuple[int, int]
E = TypeVar("E", CommittedOrder, RolledBackOrder)


class StoredOrder(NamedTuple):
    """What the database holds under one order id since the baseline: its ORDER row, lines and NEW-ORDER row."""

    c_id: int | None  # None: no ORDER row
    ol_cnt: int | None
    delivered: bool
    lines: int
    unknown_items: int  # lines naming an item that is not in ITEM
    queued: bool  # it has a NEW-ORDER row


@dataclass
class _Problems:
    """What the verification found, as lines of each check's detail."""

    lost: list[CommittedOrder] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # acknowledged orders present but not whole
    rolled_back: list[str] = field(default_factory=list)  # traces of rolled-back New-Orders


def verify_durability(session: Session, entries: Sequence[str], baseline: Any, terminals: int) -> DurabilityFindings:
    """The success log ``entries`` held to the recovered database (see the module's docstring)."""
    parsed = [parse_entry(line) for line in entries]
    committed = [entry for entry in parsed if isinstance(entry, CommittedOrder)]
    rolled_back = [entry for entry in parsed if isinstance(entry, RolledBackOrder)]
    starts = {(int(w_id), int(d_id)): int(next_o_id) for w_id, d_id, next_o_id in baseline}
    _refuse_unknown_districts(parsed, starts)
    problems = _Problems()
    session.begin(read_only=True, one_snapshot=True)  # one state of the database, read in one snapshot
    try:
        acknowledged, rolled = _by_district(committed), _by_district(rolled_back)
        for district, start in sorted(starts.items()):
            told = acknowledged.get(district, [])
            stored = _orders_since(session, district, min([start, *(entry.o_id for entry in told)]))
            _judge_acknowledged(told, stored, problems)
            _judge_rolled_back(district, told, rolled.get(district, []), stored, problems)
        now = {(int(w_id), int(d_id)): int(next_o_id) for w_id, d_id, next_o_id in _next_order_ids(session)}
    except BaseException:
        session.rollback()
        raise
    session.commit()
    advance = sum(now.get(district, start) - start for district, start in starts.items())
    checks = (_whole_check(problems.broken), _rolled_back_check(problems.rolled_back),
              _counter_check(advance, len(committed) - len(problems.lost), terminals))
    return DurabilityFindings(len(committed), len(rolled_back), tuple(map(str, problems.lost)), checks)


def _by_district(entries: Iterable[E]) -> dict[District, list[E]]:
    grouped: dict[District, list[E]] = {}
    for entry in entries:
        grouped.setdefault((entry.w_id, entry.d_id), []).append(entry)
    return grouped


def _refuse_unknown_districts(entries: Iterable[Entry], starts: dict[District, int]) -> None:
    # An entry of a district the baseline lacks is a log and a baseline of different databases.
    for entry in entries:
        if (entry.w_id, entry.d_id) not in starts:
            raise ValueError(f"the success log's {str(entry)!r} names a district the baseline does not have")


def _orders_since(session: Session, district: District, start: int) -> dict[int, StoredOrder]:
    """Every order id from ``start`` on that ORDER, ORDER-LINE or NEW-ORDER holds in the district: three
    queries, each a range of its table's primary key."""
    params = (*district, start)
    orders = session.fetchall("SELECT o_id, o_c_id, o_ol_cnt, o_carrier_id FROM orders "
                              "WHERE o_w_id = ? AND o_d_id = ? AND o_id >= ?", params)
    lines = session.fetchall("SELECT ol.ol_o_id, COUNT(*), COUNT(i.i_id) FROM order_line ol "
                             "LEFT JOIN item i ON i.i_id = ol.ol_i_id "
                             "WHERE ol.ol_w_id = ? AND ol.ol_d_id = ? AND ol.ol_o_id >= ? GROUP BY ol.ol_o_id", params)
    queued = {int(o_id) for (o_id,) in session.fetchall(
        "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id >= ?", params)}
    rows: dict[int, tuple[int | None, int | None, bool]] = {
        int(o_id): (int(c_id), int(ol_cnt), carrier is not None) for o_id, c_id, ol_cnt, carrier in orders}
    counts = {int(o_id): (int(total), int(total) - int(known)) for o_id, total, known in lines}
    stored = {}
    for o_id in sorted(rows.keys() | counts.keys() | queued):
        c_id, ol_cnt, delivered = rows.get(o_id, (None, None, False))
        total, unknown = counts.get(o_id, (0, 0))
        stored[o_id] = StoredOrder(c_id, ol_cnt, delivered, total, unknown, o_id in queued)
    return stored


def _judge_acknowledged(acknowledged: Sequence[CommittedOrder], stored: dict[int, StoredOrder],
                        problems: _Problems) -> None:
    """An acknowledged order is lost when nothing holds its id, or when an order of another customer or line count
    does (a later order, never acknowledged, took the id the lost one had); present but not whole, it is broken."""
    for entry in acknowledged:
        order = stored.get(entry.o_id)
        if order is None:
            problems.lost.append(entry)
        elif order.c_id is None:
            problems.broken.append(f"{entry}: no ORDER row, but {order.lines} line(s)"
                                   f"{' and a NEW-ORDER row' if order.queued else ''}")
        elif (order.c_id, order.ol_cnt) != (entry.c_id, entry.ol_cnt):
            problems.lost.append(entry)
        elif order.lines != entry.ol_cnt or not (order.queued or order.delivered):
            unqueued = "" if order.queued or order.delivered else ", undelivered without a NEW-ORDER row"
            problems.broken.append(f"{entry}: {order.lines} line(s){unqueued}")


def _judge_rolled_back(district: District, acknowledged: Sequence[CommittedOrder],
                       rolled_back: Sequence[RolledBackOrder], stored: dict[int, StoredOrder],
                       problems: _Problems) -> None:
    """A rolled-back New-Order left a trace when a line names an item ITEM does not have (the unused item of
    2.4.1.5), or when an order no terminal was told of is one of the district's rolled-back orders short of its
    unused item's line (what a stored function that enters the lines it finds before it rolls back leaves).
    ``acknowledged`` and ``rolled_back``: the district's entries."""
    told = {entry.o_id for entry in acknowledged}
    rolled = {(entry.c_id, entry.ol_cnt) for entry in rolled_back}
    w_id, d_id = district
    for o_id, order in stored.items():
        name = f"order {w_id} {d_id} {o_id}"
        if order.unknown_items:
            problems.rolled_back.append(f"{name}: {order.unknown_items} line(s) of an item not in ITEM")
        elif (o_id not in told and order.ol_cnt is not None and order.lines < order.ol_cnt
              and (order.c_id, order.ol_cnt) in rolled):
            problems.rolled_back.append(f"{name}: customer {order.c_id}, {order.lines} of {order.ol_cnt} lines, "
                                        "as a rolled-back New-Order of the log")


def _whole_check(broken: Sequence[str]) -> CheckResult:
    return _check(WHOLE_CONDITION, "every acknowledged New-Order present is whole: its ORDER row, O_OL_CNT "
                  "ORDER-LINE rows, its NEW-ORDER row until delivered", "acknowledged order", broken)


def _rolled_back_check(traces: Sequence[str]) -> CheckResult:
    return _check(ROLLED_BACK_CONDITION, "no New-Order the log lists as rolled back is in the database",
                  "order", traces)


def _counter_check(advance: int, surviving: int, terminals: int) -> CheckResult:
    """In flight at the crash, at most one New-Order per terminal may have committed unacknowledged."""
    unacknowledged = advance - surviving
    description = "sum of D_NEXT_O_ID advances - surviving acknowledged New-Orders in [0, terminals]"
    passed = 0 <= unacknowledged <= terminals
    detail = "" if passed else (f"D_NEXT_O_ID advanced by {advance} in all, for {surviving} surviving acknowledged "
                                f"New-Orders: {unacknowledged} unacknowledged, {terminals} terminals")
    return CheckResult(COUNTER_CONDITION, CLAUSE, description, passed, detail)


def _check(condition: int, description: str, noun: str, violations: Sequence[str]) -> CheckResult:
    """A check passed when nothing violates it, else its first violations and their count, as 3.3.2's are shown."""
    if not violations:
        return CheckResult(condition, CLAUSE, description, True, "")
    count = len(violations)
    shown = "; ".join(violations[:SHOWN_VIOLATIONS])
    return CheckResult(condition, CLAUSE, description, False,
                       f"{count} {noun}{'' if count == 1 else 's'} {'violates' if count == 1 else 'violate'}: {shown}")
