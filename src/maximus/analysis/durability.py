"""What crash tests say of a configuration's durability: per crash mode, how many cycles lost commits or left the
database inconsistent, and the one phrase a reader sees beside its throughput.

A step that is faster because it drops acknowledged commits must not read as simply faster: its durability class
("loses commits (lost 37 in 12 of 20 power cuts)") stands beside its gain wherever the step is shown.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Sequence

from maximus.records import CheckResult, CrashMode, CrashTestRecord, Verdict

CONFIDENCE = 0.95
_SEVERITY = (Verdict.DURABLE, Verdict.LOST, Verdict.INCONSISTENT)  # from best to worst
_NOUNS = {CrashMode.PROCESS: ("process crash", "process crashes"), CrashMode.POWER: ("power cut", "power cuts")}
_STEP_KEY = re.compile(r"s(\d+)/x\d+")  # an experiment's crash test: step S, test N (experiment.plan's "s<step>/...")


def _nouns(mode: CrashMode) -> tuple[str, str]:
    return _NOUNS.get(mode, (f"{mode.value} crash", f"{mode.value} crashes"))


def cycles_text(count: int, mode: CrashMode) -> str:
    """E.g. "1 power cut", "20 process crashes"."""
    one, many = _nouns(mode)
    return f"{count} {one if count == 1 else many}"


def loss_upper_bound(cycles: int) -> float | None:
    """The 95 % upper bound of the probability that one cycle loses commits, when none of ``cycles`` did: the exact
    binomial bound 1 - 0.05^(1/n), which the rule of three (3/n) approximates. None without a cycle."""
    return 1 - (1 - CONFIDENCE) ** (1 / cycles) if cycles > 0 else None


@dataclass(frozen=True)
class ModeDurability:
    """The crash tests of one configuration in one crash mode."""

    mode: CrashMode
    cycles: int
    durable: int
    lost: int  # cycles whose verdict is lost (consistent, but acknowledged commits missing)
    inconsistent: int
    cycles_losing: int  # cycles with an acknowledged commit missing, whatever their verdict
    commits_lost: int  # acknowledged commits missing, over every cycle
    acknowledged: int  # acknowledged commits, over every cycle
    worst: Verdict
    median_recovery_s: float | None  # over the cycles that came back; None when none did
    not_recovered: int
    windows: tuple[str, ...]  # the configuration's documented loss windows for this mode, each once

    @property
    def loss_bound(self) -> float | None:
        """With no cycle lost or inconsistent, the 95 % upper bound of the per-cycle loss probability; else None (the
        observed losses say more than a bound)."""
        return loss_upper_bound(self.cycles) if self.worst is Verdict.DURABLE else None

    def phrase(self, alone: bool = True) -> str:
        """The class in a few words; ``alone`` False names the mode after the verdict, to sit beside another mode's
        (``durable on process crash (5)``)."""
        n, kind = cycles_text(self.cycles, self.mode), _nouns(self.mode)[0]
        losses = f"lost {self.commits_lost} in {self.cycles_losing} of {n}"
        if self.worst is Verdict.INCONSISTENT:
            extra = f", lost {self.commits_lost} in {self.cycles_losing}" if self.commits_lost else ""
            return f"inconsistent after {self.inconsistent} of {n}{extra}"
        if self.worst is Verdict.LOST:
            if alone:
                return f"loses commits ({losses})"
            return f"loses commits on {kind} (lost {self.commits_lost} in {self.cycles_losing} of {self.cycles})"
        return f"durable ({n})" if alone else f"durable on {kind} ({self.cycles})"

    def details(self) -> str:
        """The phrase, then its facts (``facts``)."""
        return "; ".join([self.phrase(), *self.facts()])

    def facts(self) -> list[str]:
        """Recovery, (with no loss) the bound on the loss probability, and the documented window."""
        parts = []
        if self.median_recovery_s is not None:
            parts.append(f"median recovery {self.median_recovery_s:.2f} s")
        if self.not_recovered:
            parts.append(f"did not come back after {self.not_recovered}")
        bound = self.loss_bound
        if bound is not None:
            parts.append(f"no loss in {cycles_text(self.cycles, self.mode)}: the probability that one loses commits "
                         f"is below {100 * bound:.0f} % ({100 * CONFIDENCE:.0f} % upper bound)")
        parts.append(f"documented window: {'; '.join(self.windows)}" if self.windows else "no documented window")
        return parts


@dataclass(frozen=True)
class Durability:
    """A configuration's (or a step's) crash tests, per mode in CrashMode's order."""

    modes: tuple[ModeDurability, ...]
    test_ids: tuple[int, ...]

    @property
    def worst(self) -> Verdict:
        return max((m.worst for m in self.modes), key=_SEVERITY.index)

    @property
    def durability_class(self) -> str:
        """The phrase a reader sees beside throughput, e.g. "durable (20 power cuts)" or "durable on process crash
        (5), loses commits on power cut (lost 37 in 12 of 20)"."""
        if len(self.modes) == 1:
            return self.modes[0].phrase()
        return ", ".join(m.phrase(alone=False) for m in self.modes)

    def mode(self, mode: CrashMode) -> ModeDurability | None:
        return next((m for m in self.modes if m.mode is mode), None)


def durability(records: Sequence[CrashTestRecord]) -> Durability | None:
    """The crash tests given, taken as one configuration's; None without any (not tested)."""
    if not records:
        return None
    modes = [mode for mode in CrashMode if any(r.test.mode is mode for r in records)]
    return Durability(tuple(_mode(mode, [r for r in records if r.test.mode is mode]) for mode in modes),
                      tuple(r.id for r in records))


def _mode(mode: CrashMode, records: Sequence[CrashTestRecord]) -> ModeDurability:
    tests = [r.test for r in records]
    verdicts = [t.verdict for t in tests]
    recoveries = [t.recovery_s for t in tests if t.recovery_s is not None]
    return ModeDurability(
        mode, len(tests), verdicts.count(Verdict.DURABLE), verdicts.count(Verdict.LOST),
        verdicts.count(Verdict.INCONSISTENT), sum(1 for t in tests if t.findings.lost),
        sum(len(t.findings.lost) for t in tests), sum(t.findings.acknowledged for t in tests),
        max(verdicts, key=_SEVERITY.index), statistics.median(recoveries) if recoveries else None,
        len(tests) - len(recoveries), tuple(dict.fromkeys(t.window for t in tests if t.window)))


Configuration = tuple[str, tuple[tuple[str, str], ...]]  # engine, knobs sorted by name


def configuration_of(record: CrashTestRecord) -> Configuration:
    return record.test.engine, tuple(sorted((str(k), str(v)) for k, v in record.test.knobs.items()))


def configuration_text(configuration: Configuration) -> str:
    """E.g. "sqlite synchronous=off journal_mode=wal" ("sqlite (defaults)" without a knob)."""
    engine, knobs = configuration
    return f"{engine} {' '.join(f'{k}={v}' for k, v in knobs)}" if knobs else f"{engine} (defaults)"


def by_configuration(records: Sequence[CrashTestRecord]) -> list[tuple[Configuration, Durability]]:
    """The crash tests grouped by configuration (engine and knobs), in the order each first appears."""
    groups: dict[Configuration, list[CrashTestRecord]] = {}
    for record in records:
        groups.setdefault(configuration_of(record), []).append(record)
    return [(configuration, found) for configuration, group in groups.items()
            if (found := durability(group)) is not None]


def step_of(record: CrashTestRecord) -> int | None:
    """The experiment step a crash test belongs to, from its plan key ``s<step>/x<n>``; None outside a plan."""
    found = _STEP_KEY.fullmatch(record.test.plan_key or "")
    return int(found.group(1)) if found else None


def durability_by_step(records: Sequence[CrashTestRecord], steps: int) -> tuple[Durability | None, ...]:
    """Each step's durability (None: not tested), from an experiment's crash tests."""
    return tuple(durability([r for r in records if step_of(r) == step]) for step in range(steps))


def failed_checks(record: CrashTestRecord) -> list[CheckResult]:
    """The conditions that failed after recovery: the verification's own, then the consistency and engine checks."""
    return [check for check in (*record.test.findings.checks, *record.test.checks) if check.passed is False]
