"""A configuration's durability class from its crash tests: per mode, the worst verdict and what was lost."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from maximus.analysis.durability import (by_configuration, configuration_text, durability, durability_by_step,
                                         failed_checks, loss_upper_bound, step_of)
from maximus.records import CrashMode, CrashTest, CrashTestRecord, Verdict

from crashes import FAILED, crash_test  # tests/crashes.py

POWER, PROCESS = CrashMode.POWER, CrashMode.PROCESS


def _records(*tests: CrashTest) -> list[CrashTestRecord]:
    return [CrashTestRecord(number, "2026-01-01T00:00:00+00:00", test) for number, test in enumerate(tests, 1)]


def test_no_crash_test_is_not_tested() -> None:
    assert durability([]) is None


def test_every_cycle_durable_is_durable_with_the_upper_bound_of_its_loss_probability() -> None:
    found = durability(_records(*[crash_test(seed=seed) for seed in range(20)]))
    assert found is not None and found.durability_class == "durable (20 power cuts)"
    [power] = found.modes
    assert (power.cycles, power.durable, power.commits_lost, power.worst) == (20, 20, 0, Verdict.DURABLE)
    assert power.loss_bound == pytest.approx(1 - 0.05 ** (1 / 20)) and 0.13 < power.loss_bound < 3 / 20
    assert "below 14 % (95 % upper bound)" in power.details()
    assert "below" not in found.durability_class  # the bound is for the listing's summary, not the short class


def test_lost_commits_are_counted_over_cycles() -> None:
    tests = [crash_test(Verdict.LOST, lost=3) for _ in range(12)] + [crash_test(Verdict.LOST, lost=1)] + \
        [crash_test() for _ in range(7)]
    found = durability(_records(*tests))
    assert found is not None and found.durability_class == "loses commits (lost 37 in 13 of 20 power cuts)"
    assert found.modes[0].loss_bound is None and found.worst is Verdict.LOST
    assert found.modes[0].acknowledged == 20 * 120


def test_inconsistent_is_worse_than_lost() -> None:
    tests = [crash_test(Verdict.INCONSISTENT), crash_test(Verdict.INCONSISTENT, recovery_s=None),
             crash_test(Verdict.LOST, lost=4), crash_test()]
    found = durability(_records(*tests))
    assert found is not None and found.worst is Verdict.INCONSISTENT
    assert found.durability_class == "inconsistent after 2 of 4 power cuts, lost 4 in 1"
    assert found.modes[0].not_recovered == 1 and "did not come back after 1" in found.modes[0].details()


def test_mixed_modes_name_each_mode() -> None:
    tests = [crash_test(mode=PROCESS) for _ in range(5)] + [crash_test(Verdict.LOST, lost=2) for _ in range(3)] + \
        [crash_test()]
    found = durability(_records(*tests))
    assert found is not None
    assert found.durability_class == "durable on process crash (5), loses commits on power cut (lost 6 in 3 of 4)"
    assert [m.mode for m in found.modes] == [PROCESS, POWER]


def test_one_cycle_and_the_median_recovery() -> None:
    found = durability(_records(crash_test(mode=PROCESS, recovery_s=0.5)))
    assert found is not None and found.durability_class == "durable (1 process crash)"
    tests = [crash_test(recovery_s=s) for s in (0.1, 0.3, 2.0)] + [crash_test(Verdict.INCONSISTENT, recovery_s=None)]
    power = durability(_records(*tests))
    assert power is not None and power.modes[0].median_recovery_s == pytest.approx(0.3)


def test_the_upper_bound_follows_the_rule_of_three() -> None:
    assert loss_upper_bound(0) is None
    assert loss_upper_bound(1) == pytest.approx(0.95)
    assert math.isclose(loss_upper_bound(300) or 0, 3 / 300, rel_tol=0.01)


def test_crash_tests_are_grouped_by_engine_and_knobs() -> None:
    records = _records(crash_test(knobs={"synchronous": "off", "journal_mode": "wal"}, verdict=Verdict.LOST, lost=1),
                       crash_test(knobs={}), crash_test(knobs={"journal_mode": "wal", "synchronous": "off"}))
    groups = by_configuration(records)
    assert [configuration_text(c) for c, _ in groups] == ["sqlite journal_mode=wal synchronous=off",
                                                          "sqlite (defaults)"]
    assert groups[0][1].test_ids == (1, 3) and groups[0][1].modes[0].cycles_losing == 1


def test_an_experiments_crash_tests_belong_to_their_step() -> None:
    records = _records(crash_test(plan_key="s0/x1"), crash_test(Verdict.LOST, lost=2, plan_key="s2/x1"),
                       crash_test(Verdict.LOST, lost=1, plan_key="s2/x2"), crash_test(plan_key=None))
    assert [step_of(r) for r in records] == [0, 2, 2, None]
    baseline, first, second = durability_by_step(records, 3)
    assert baseline is not None and baseline.durability_class == "durable (1 power cut)"
    assert first is None
    assert second is not None and second.durability_class == "loses commits (lost 3 in 2 of 2 power cuts)"


def test_failed_checks_are_the_findings_then_the_consistency_conditions() -> None:
    test = crash_test(Verdict.INCONSISTENT)
    test = replace(test, findings=replace(test.findings, checks=(replace(FAILED, condition=9),)))
    assert [c.condition for c in failed_checks(_records(test)[0])] == [9, 3]
