"""Typed, immutable hand-offs between the stages: plan -> driver -> store -> analysis -> report. The core both
wings share: the run side writes these records, the read side reads them back, and neither imports the other.
``WorkloadReading`` is how a workload's runs are read (names, reported transactions, validity bands), stored with
each run so that reading results asks no workload."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Mapping, Sequence

# A deferred transaction's completion is recorded as a transaction of its own, under this prefix to its name
# (``deferred_delivery``): the driver names it so, and the read side tells it from the terminals' own by it
DEFERRED_PREFIX = "deferred_"


class Outcome(StrEnum):
    """What became of one business transaction (after any retries)."""

    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"  # rolled back by the workload's rule (TPC-C 2.4.2.3: 1 % of New-Orders)
    RETRY = "retry"  # a retryable conflict (busy, serialization failure, deadlock); only seen by the retry policy
    FAILED = "failed"  # an error, or retries exhausted: counted, never swallowed


# An outcome by its stored value: a dictionary's lookup, where Outcome(value) took a quarter of the time of reading a
# run's samples back and two thirds of the time of turning a run's wire samples into records
OUTCOME_OF: Mapping[str, Outcome] = {outcome.value: outcome for outcome in Outcome}


class RollbackByRule(Exception):
    """Raised by a transaction whose own rule demands a rollback (TPC-C 2.4.2.3); not an error."""


# Failed transactions in a run's measured window, in per cent of all, above which the run is failed. One per
# cent: a healthy run fails none (conflicts are retried), while one of the small transactions of the mix
# failing every time is 4 % of it (5.2.3), so nothing the figures depend on can fail unnoticed.
MAX_FAILED_PERCENT = 1.0


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C or a signal: stored with everything measured so far
    FAILED = "failed"


RATE, ARRIVALS_OPTION = "rate", "arrivals"  # a fixed-rate run's options: its transactions per second, its arrivals
EMBEDDED = "embedded"  # a run's option (RunSpec.options): "yes" where its engine ran inside Maximus's client processes


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything that defines one measured run."""

    engine: str
    knobs: Mapping[str, str]
    workload: str
    settings: Mapping[str, Any]  # the workload's own (TPC-C: warehouses, keying, mix), as it gives them back
    terminals: int
    warmup_s: float
    duration_s: float
    seed: int
    database: str = ""
    options: Mapping[str, str] = field(default_factory=dict)


def differences(a: RunSpec, b: RunSpec) -> list[tuple[str, str, str]]:
    """What two runs' specifications set differently, as (what, in a, in b): the knobs each run was given
    and the rest of its setup, the workload's settings included. A knob one of them left at its default
    shows as ``default``."""
    fields = [("engine", a.engine, b.engine), ("workload", a.workload, b.workload),
              ("terminals", a.terminals, b.terminals), ("transactions", a.options.get("transactions", "-"),
                                                         b.options.get("transactions", "-")),
              ("pacing", _pacing(a), _pacing(b)),
              ("warm-up s", a.warmup_s, b.warmup_s), ("measured s", a.duration_s, b.duration_s),
              ("seed", a.seed, b.seed)]
    settings = [(name, a.settings.get(name, "-"), b.settings.get(name, "-"))
                for name in dict.fromkeys([*a.settings, *b.settings])]
    knobs = [(name, a.knobs.get(name, "default"), b.knobs.get(name, "default"))
             for name in sorted({*a.knobs, *b.knobs})]
    return [(what, _text(x), _text(y)) for what, x, y in fields + settings + knobs if x != y]


def _pacing(spec: RunSpec) -> str:
    """``50/s poisson`` for a fixed-rate run, ``closed loop`` for another: a fixed rate caps the throughput compared."""
    rate = spec.options.get(RATE)
    return f"{rate}/s {spec.options.get(ARRIVALS_OPTION, 'regular')}" if rate else "closed loop"


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True, slots=True)
class TxnSample:
    """One business transaction as the remote terminal emulator saw it.

    Times are seconds from the run's time origin (the start barrier), so a sample can be placed
    in the warm-up or the measured window later without any other context.
    """

    terminal: int
    transaction: str
    start: float
    latency: float  # from its actual start to its completion: its service time in a fixed-rate run
    outcome: Outcome
    attempts: int = 1
    error: str = ""
    intended: float | None = None  # a fixed-rate run's: when its schedule meant it to start (None: closed loop)

    @property
    def scheduled_latency(self) -> float:
        """From when it should have started to its completion (issue #45): a stall shows in every transaction the
        schedule held back, not only in the one that met it. The service time in a closed-loop run."""
        return self.latency if self.intended is None else self.start + self.latency - self.intended


@dataclass(frozen=True, slots=True)
class DeferredResult:
    """A deferred transaction's entry in its result file (TPC-C 2.7.2.3): when it was queued and when it
    completed, in seconds from the run's time origin, its outcome, and what it recorded (JSON-able)."""

    terminal: int
    transaction: str
    queued: float
    completed: float
    outcome: Outcome
    record: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Window:
    """The measured interval, in seconds from the time origin."""

    start: float
    end: float

    @property
    def minutes(self) -> float:
        return max(self.end - self.start, 0.0) / 60.0

    def contains(self, sample: TxnSample) -> bool:
        """TPC-C 5.4: a transaction counts when its whole response time lies inside the interval."""
        return self.holds(sample.start, sample.latency)

    def holds(self, start: float, latency: float) -> bool:
        return start >= self.start and start + latency <= self.end


@dataclass(frozen=True)
class CheckResult:
    """One consistency condition of a database (TPC-C 3.3.2): checked by the workload, stored with the run."""

    condition: int
    clause: str  # where it is defined, e.g. "3.3.2.1"
    description: str
    passed: bool | None  # None: skipped
    detail: str  # "" when passed; the violations, or why it was skipped


ENGINE_CHECK = 100  # the engine's own integrity check (``Engine.integrity_check``) is numbered from here, after the
# workload's conditions (TPC-C's twelve), so both are stored side by side with a run
ENGINE_CLAUSE = "engine"  # the clause an engine's check names: not a workload's specification


@dataclass(frozen=True)
class Headline:
    """The workload's figure of merit: completed ``transaction``s per ``per_seconds`` of the measured window,
    truncated to an integer (TPC-C's tpmC per minute, 5.4; pgbench's tps per second), and the same counting
    committed ones only."""

    key: str  # as exports name it: "tpmc"
    name: str  # as tables show it: "tpmC"
    meaning: str  # "New-Orders per minute incl. rollbacks (5.4)"
    transaction: str  # whose completions it counts: "new_order"
    committed_key: str  # "nopm"
    committed_name: str  # "NOPM"
    committed_meaning: str  # "committed New-Orders per minute"
    per_second_name: str  # the headline transaction's completions as a timeline counts them: "New-Orders"
    per_seconds: float = 60.0  # the period the rate is given over: 60 (per minute, tpmC) or 1 (per second, tps)

    def rate(self, completions: float, seconds: float) -> float:
        """``completions`` in ``seconds`` as this figure counts them (per minute, or per second)."""
        return completions * self.per_seconds / seconds

    @property
    def period(self) -> str:
        """How a rate's unit names the period: "min" or "s"."""
        return "min" if self.per_seconds == 60.0 else "s" if self.per_seconds == 1.0 else f"{self.per_seconds:g} s"


@dataclass(frozen=True)
class Presentation:
    """How tables, reports and exports name a run of a workload with given settings
    (``Workload.presentation``), so that none of them needs to know the workload."""

    headline: Headline
    benchmark: str  # "TPC-C"; "TPC-C-like (keying and think times off)" when the settings leave the specification
    conforming: bool  # the settings follow the workload's specification
    scale: str  # "2 warehouse(s)"
    short_scale: str  # as a narrow column shows it: "2 wh"
    details: str  # the other settings, as a header shows them: "mix deck"
    conformance: str  # what the settings mean for conformance, a sentence under the report's label
    transaction_labels: Mapping[str, str]  # name -> as tables show it ("new_order" -> "New-Order")
    response_time_limits: Mapping[str, float]  # name -> the specification's 90th-percentile limit, seconds

    def label(self, transaction: str) -> str:
        return self.transaction_labels.get(transaction, transaction)


@dataclass(frozen=True)
class BandResult:
    """A figure of the run against the band a valid run must keep it in (TPC-C 5.5.1.5, 5.2.3, 2.7.4.2)."""

    name: str
    value: float | None  # None: nothing to measure
    low: float
    high: float
    sample: int  # how many draws the value rests on
    note: str = ""  # why the band does not apply
    clause: str = ""

    @property
    def status(self) -> str:
        if self.note:
            return "n/a"
        if self.value is None:
            return "no data"
        return "ok" if self.low <= self.value <= self.high else "OUT OF BAND"


@dataclass(frozen=True)
class Band:
    """One band as data: ``scale`` times the sum of the ``numerator`` counters over the sum of the ``denominator``
    ones (the draws the value rests on), kept between ``low`` and ``high``. ``maximus.bands`` says what the
    counters count and computes the value."""

    name: str
    numerator: tuple[str, ...]
    denominator: tuple[str, ...]
    low: float
    high: float
    clause: str
    scale: float = 100.0  # a percentage; 1.0 for a mean
    note: str = ""  # why the band does not apply to these settings


@dataclass(frozen=True)
class WorkloadReading:
    """Everything the read side needs of a run's workload, stored with the run (``Workload.reading``)."""

    presentation: Presentation
    reported_transactions: tuple[str, ...]  # in the order tables show them, deferred ones included
    write_transactions: tuple[str, ...]  # sample names of those that commit changes (the monitoring cross-checks)
    validity: tuple[Band, ...] = ()  # the input-validity bands (TPC-C 5.5.1.5, 2.7.4.2)
    mix: tuple[Band, ...] = ()  # each transaction's share against its minimum (TPC-C 5.2.3)

    @property
    def headline(self) -> Headline:
        return self.presentation.headline

    def to_data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> WorkloadReading:
        shown = dict(data["presentation"])
        presentation = Presentation(**(shown | {"headline": Headline(**shown["headline"])}))
        return cls(presentation, tuple(data["reported_transactions"]), tuple(data["write_transactions"]),
                   _bands(data.get("validity", ())), _bands(data.get("mix", ())))


def _bands(rows: Sequence[Mapping[str, Any]]) -> tuple[Band, ...]:
    return tuple(Band(**(dict(row) | {"numerator": tuple(row["numerator"]),
                                      "denominator": tuple(row["denominator"])})) for row in rows)


@dataclass(frozen=True)
class RunRecord:
    """A stored run, as the results database gives it back."""

    id: int
    started_at: str
    finished_at: str | None
    status: RunStatus
    spec: RunSpec
    effective_knobs: Mapping[str, str]
    engine_settings: Mapping[str, str]
    load_seconds: float | None
    loaded_in_run: bool
    load_seed: int | None
    constants: Mapping[str, Any]  # the inputs the run drew from (TPC-C: the NURand constants)
    environment: Mapping[str, Any]
    warnings: tuple[str, ...]
    errors: tuple[str, ...]
    window: Window
    elapsed_s: float | None
    experiment_id: int | None = None
    plan_key: str | None = None
    reading: WorkloadReading | None = None  # None: stored by a Maximus that did not keep it (api.open_results adds it)


@dataclass(frozen=True)
class ExperimentRecord:
    id: int
    name: str
    created_at: str
    finished_at: str | None
    source_path: str
    source_text: str
    plan: Any  # the expanded plan, as JSON data
    status: str  # running, complete


@dataclass(frozen=True)
class RunStart:
    """A run as it is stored when it starts: its specification and what was found before the first transaction
    (the engine's settings, the build, the environment). Stored again as it was, beside the results database, when
    that one cannot take the run's end."""

    spec: RunSpec
    effective_knobs: Mapping[str, str]  # every knob with the value the run uses (defaults filled in)
    engine_settings: Mapping[str, str]  # what the engine reported on the run's own session
    load_seconds: float | None
    loaded_in_run: bool  # the run built its database (its load time is its own)
    load_seed: int | None
    constants: Mapping[str, Any]  # the inputs the run drew from, beside its seed (TPC-C: the NURand constants)
    environment: Mapping[str, Any]  # the fingerprint
    warnings: tuple[str, ...] = ()
    experiment_id: int | None = None
    plan_key: str | None = None
    reading: WorkloadReading | None = None  # how the read side reads the run (``Workload.reading``)


@dataclass(frozen=True)
class IntervalHistogram:
    """One transaction type's response times of one kind, of the completed transactions that started in
    [start, start + 1 s) from the time origin, as an HdrHistogram of microseconds (``maximus.histograms``);
    ``counted``: those whose whole response time lies in the measured window (TPC-C 5.4), whose histograms make the
    run's figures."""

    transaction: str
    kind: str  # "latency" (from the intended start in a fixed-rate run, else from the start) or "service"
    start: float
    counted: bool
    encoded: str  # HdrHistogram's compressed encoding (base64 of zlib), which other tools read too


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One raw reading as stored with a run.

    ``time`` is seconds from the run's time origin (the start barrier), like ``TxnSample.start``,
    so a reading can be placed in the warm-up or the measured window without other context.
    """

    time: float
    source: str
    name: str
    value: float
    unit: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)

    def labels_text(self) -> str:
        """The labels as stored: JSON with sorted keys, so equal labels give equal text."""
        return json.dumps(dict(self.labels), sort_keys=True)


# Crash tests (issue #42): a configuration's durability measured by crashing it

class CrashMode(StrEnum):
    """What a crash test does to the database under its terminals."""

    PROCESS = "process"  # SIGKILL of every server process (an embedded engine's: every process holding the file)
    POWER = "power"  # a power cut of the power-cut layer the database's files are on (maximus.durability)


class Verdict(StrEnum):
    """A crash test's measured durability class."""

    DURABLE = "durable"  # every acknowledged commit survived, and the database is consistent
    LOST = "lost"  # acknowledged commits were lost; the database is consistent
    INCONSISTENT = "inconsistent"  # a consistency condition or the engine's integrity check failed after recovery,
    # or the engine did not come back at all


@dataclass(frozen=True)
class DurabilityFindings:
    """What a workload's verification found after a crash, against its success log (TPC-C 3.5.4)."""

    acknowledged: int  # commits the terminals were told of, as the log lists them
    rolled_back: int  # transactions the log lists as rolled back by the workload's rule
    lost: tuple[str, ...]  # the acknowledged commits missing after recovery, each as the log named it
    checks: tuple[CheckResult, ...]  # the verification's own conditions, passed or not


@dataclass(frozen=True)
class CrashTest:
    """One crash, recovery and verification cycle, as it is stored: its configuration, how it was crashed, what
    the recovered database showed. Never a throughput figure."""

    engine: str
    knobs: Mapping[str, str]  # the knobs the test was given (the engine's and the operating system's)
    workload: str
    settings: Mapping[str, Any]
    terminals: int
    mode: CrashMode
    seed: int
    verdict: Verdict
    findings: DurabilityFindings
    checks: tuple[CheckResult, ...]  # the workload's consistency conditions and the engine's integrity check
    recovery_s: float | None  # from the restart to the first query answered; None: it did not come back
    crashed_at_s: float  # seconds after the terminals started
    window: str  # the documented loss window of the configuration for this mode ("" : none documented)
    notes: tuple[str, ...] = ()  # what the cut did, why the engine did not come back, ...
    environment: Mapping[str, Any] = field(default_factory=dict)
    experiment_id: int | None = None
    plan_key: str | None = None  # the step's run this test belongs to, in an experiment


@dataclass(frozen=True)
class CrashTestRecord:
    """A stored crash test."""

    id: int
    at: str
    test: CrashTest


def verdict_of(findings: DurabilityFindings, checks: Sequence[CheckResult], recovered: bool) -> Verdict:
    """Inconsistent when the engine did not come back or any condition failed; else lost when an acknowledged commit
    is missing (``findings.lost``); else durable."""
    if not recovered or any(check.passed is False for check in (*findings.checks, *checks)):
        return Verdict.INCONSISTENT
    return Verdict.LOST if findings.lost else Verdict.DURABLE


# The device's own limit beside a storage-bound run (issue #43)

@dataclass(frozen=True)
class StorageAccess:
    """How an engine reads its data from the file system, as fio can repeat it (``Engine.storage_access``)."""

    page_bytes: int  # what one page read asks for: PostgreSQL 8 KiB, InnoDB 16 KiB, SQLite its page_size
    direct: bool  # O_DIRECT (InnoDB's usual flush method), else buffered through the page cache
    mapped: bool = False  # through mmap (SQLite with mmap_size > 0): fio's mmap engine repeats it


@dataclass(frozen=True)
class DeviceJob:
    """The fio job that matches a storage-bound run (``Workload.device_job``): the same access, by as many jobs as
    the run has clients, over a file as large as the data the run reads, on the same file system."""

    pattern: str  # fio's rw: "randread" (single-row reads), "read" (a sequential scan)
    block_bytes: int
    jobs: int  # one synchronous job per client (psync, iodepth 1): N clients are N jobs, not queue depth N
    file_bytes: int
    direct: bool
    mapped: bool = False
    runtime_s: float = 10.0
    # How the run's headline compares with it: "operations" (completions/s against fio's IOPS: one page read each) or
    # "bytes" (completions/s x ``bytes_per_completion`` against fio's bandwidth: a scan reads the whole table)
    compared_as: str = "operations"
    bytes_per_completion: int = 0


@dataclass(frozen=True)
class DeviceLimit:
    """What fio measured of the device under a run's data, stored with the run: the job, where it ran, fio's own
    JSON as it reported it (every figure read from it), and its main figures."""

    job: DeviceJob
    directory: str
    iops: float
    bytes_per_s: float
    latency_p50_us: float
    latency_p99_us: float
    output: Mapping[str, Any] = field(default_factory=dict)
