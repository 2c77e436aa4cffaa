"""TPC-C's random functions (clauses 2.1.5, 2.1.6, 4.3.2.3): NURand, last names, C-Load/C-Run."""

from __future__ import annotations

from collections import Counter

import pytest

from maximus.workloads.tpcc.constants import (
    A_C_ID, A_C_LAST, A_OL_I_ID, C_ID_RANGE, C_LAST_RANGE, OL_I_ID_RANGE, SYLLABLES,
)
from maximus.workloads.tpcc.random import (
    LAST_NAMES, NURandConstants, TpccRandom, last_name, valid_c_delta,
)

FIELDS = [
    pytest.param(A_C_LAST, *C_LAST_RANGE, id="C_LAST"),
    pytest.param(A_C_ID, *C_ID_RANGE, id="C_ID"),
    pytest.param(A_OL_I_ID, *OL_I_ID_RANGE, id="OL_I_ID"),
]


def _rng(seed: int = 7, constants: NURandConstants = NURandConstants(0, 0, 0)) -> TpccRandom:
    return TpccRandom(seed, constants)


def test_the_three_a_values_and_ranges_are_the_specs() -> None:
    # 2.1.6: A = 255 for C_LAST in 0..999, 1023 for C_ID in 1..3000, 8191 for OL_I_ID in 1..100000
    assert (A_C_LAST, C_LAST_RANGE) == (255, (0, 999))
    assert (A_C_ID, C_ID_RANGE) == (1023, (1, 3000))
    assert (A_OL_I_ID, OL_I_ID_RANGE) == (8191, (1, 100_000))


@pytest.mark.parametrize("a, x, y", FIELDS)
@pytest.mark.parametrize("c_choice", ["zero", "max", "middle"])
def test_nurand_stays_within_x_y(a: int, x: int, y: int, c_choice: str) -> None:
    c = {"zero": 0, "max": a, "middle": a // 3}[c_choice]
    rng = _rng(seed=a + len(c_choice))
    values = [rng.nurand(a, x, y, c) for _ in range(20_000)]
    assert min(values) >= x
    assert max(values) <= y


@pytest.mark.parametrize("a, x, y", FIELDS)
def test_nurand_formula_matches_2_1_6_exactly(a: int, x: int, y: int) -> None:
    """Replays the two uniform draws with a twin stream and applies the formula by hand."""
    c = 77
    rng, twin = _rng(3), _rng(3)
    for _ in range(2_000):
        expected = (((twin.uniform(0, a) | twin.uniform(x, y)) + c) % (y - x + 1)) + x
        assert rng.nurand(a, x, y, c) == expected


@pytest.mark.parametrize("a, x, y, draws, min_ratio, min_top_decile", [
    pytest.param(A_C_LAST, *C_LAST_RANGE, 100_000, 10, 0.40, id="C_LAST"),
    pytest.param(A_C_ID, *C_ID_RANGE, 150_000, 20, 0.45, id="C_ID"),
    pytest.param(A_OL_I_ID, *OL_I_ID_RANGE, 200_000, 50, 0.50, id="OL_I_ID"),
])
def test_nurand_is_far_from_uniform(a: int, x: int, y: int, draws: int, min_ratio: float,
                                    min_top_decile: float) -> None:
    """Exact NURand: the hottest value is ~26x (C_LAST), ~58x (C_ID), ~195x (OL_I_ID) the uniform
    share, and the hottest 10 % of values carry 54 %, 61 %, 71 % of the draws. A uniform draw would
    give ~1x (a few x at most for OL_I_ID's 2 expected hits per value) and 10 %."""
    rng = _rng(11)
    counts = Counter(rng.nurand(a, x, y, 0) for _ in range(draws))
    n = y - x + 1
    uniform_expectation = draws / n
    assert max(counts.values()) > min_ratio * uniform_expectation
    top_decile = sum(sorted(counts.values(), reverse=True)[: n // 10])
    assert top_decile / draws > min_top_decile


def test_field_helpers_use_their_own_a_range_and_c() -> None:
    constants = NURandConstants(c_last=200, c_id=1000, ol_i_id=8000)
    rng, twin = _rng(5, constants), _rng(5, constants)
    for _ in range(1_000):
        assert rng.customer_id() == twin.nurand(A_C_ID, 1, 3000, 1000)
        assert rng.item_id() == twin.nurand(A_OL_I_ID, 1, 100_000, 8000)
        assert rng.customer_last_name() == LAST_NAMES[twin.nurand(A_C_LAST, 0, 999, 200)]


@pytest.mark.parametrize("number, name", [
    (371, "PRICALLYOUGHT"), (0, "BARBARBAR"), (999, "EINGEINGEING"), (1, "BARBAROUGHT"),
    (100, "OUGHTBARBAR"), (10, "BAROUGHTBAR"), (245, "ABLEPRESESE"),
])
def test_last_name_examples(number: int, name: str) -> None:
    assert last_name(number) == name
    assert LAST_NAMES[number] == name


def test_last_names_table_is_all_1000_distinct_syllable_triples() -> None:
    assert SYLLABLES == ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")
    assert len(LAST_NAMES) == 1000
    assert len(set(LAST_NAMES)) == 1000
    assert max(map(len, LAST_NAMES)) <= 16  # fits C_LAST VARCHAR(16)


@pytest.mark.parametrize("delta, valid", [
    (64, False), (65, True), (66, True), (95, True), (96, False), (97, True),
    (111, True), (112, False), (113, True), (119, True), (120, False), (0, False), (200, False),
])
def test_valid_c_delta(delta: int, valid: bool) -> None:
    assert valid_c_delta(0, delta) is valid
    assert valid_c_delta(delta, 0) is valid  # the delta is an absolute value
    assert valid_c_delta(130, 130 + delta) is valid


@pytest.mark.parametrize("seed", [0, 1, 42, 12345])
def test_for_run_always_satisfies_2_1_6_1(seed: int) -> None:
    for c_load in range(A_C_LAST + 1):
        run = NURandConstants.for_run(c_load, seed)
        delta = abs(c_load - run.c_last)
        assert 65 <= delta <= 119 and delta not in (96, 112), (c_load, run)
        assert valid_c_delta(c_load, run.c_last)
        assert 0 <= run.c_last <= A_C_LAST
        assert 0 <= run.c_id <= A_C_ID
        assert 0 <= run.ol_i_id <= A_OL_I_ID


def test_for_run_and_for_load_are_deterministic_per_seed() -> None:
    for seed in (0, 3, 99):
        assert NURandConstants.for_load(seed) == NURandConstants.for_load(seed)
        for c_load in (0, 128, 255):
            assert NURandConstants.for_run(c_load, seed) == NURandConstants.for_run(c_load, seed)
    loads = {NURandConstants.for_load(seed) for seed in range(20)}
    runs = {NURandConstants.for_run(100, seed) for seed in range(20)}
    assert len(loads) > 10 and len(runs) > 10  # the seed matters


def test_for_load_constants_lie_in_0_to_a() -> None:
    for seed in range(200):
        load = NURandConstants.for_load(seed)
        assert 0 <= load.c_last <= A_C_LAST  # 2.1.6.1: C-Load in 0..255
        assert 0 <= load.c_id <= A_C_ID
        assert 0 <= load.ol_i_id <= A_OL_I_ID


def test_uniform_includes_both_ends_and_percent_is_1_to_100() -> None:
    rng = _rng(9)
    assert {rng.uniform(1, 3) for _ in range(500)} == {1, 2, 3}
    assert {rng.percent() for _ in range(20_000)} == set(range(1, 101))


@pytest.mark.parametrize("warehouses", [2, 3, 10])
def test_other_warehouse_is_uniform_over_the_others(warehouses: int) -> None:
    rng = _rng(13)
    for home in range(1, warehouses + 1):
        seen = Counter(rng.other_warehouse(home, warehouses) for _ in range(3_000))
        assert set(seen) == set(range(1, warehouses + 1)) - {home}
        expected = 3_000 / (warehouses - 1)
        assert all(abs(count - expected) < 0.25 * expected for count in seen.values()), seen


def test_same_seed_same_stream_different_seed_different_stream() -> None:
    def draws(seed: int) -> list[int]:
        rng = _rng(seed)
        return [rng.customer_id() for _ in range(100)]

    assert draws(1) == draws(1)
    assert draws(1) != draws(2)


def test_money_is_in_cents_within_bounds() -> None:
    rng = _rng(17)
    values = [rng.money(100, 500_000) for _ in range(5_000)]
    assert min(values) >= 1.00 and max(values) <= 5_000.00
    assert all(round(v * 100) == pytest.approx(v * 100) for v in values)
