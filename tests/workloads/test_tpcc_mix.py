"""The transaction mix (5.2.3, 5.2.4): the 23-card deck, weighted choice and the --mix parser."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from maximus.errors import UserError
from maximus.workloads.tpcc.constants import DECK, DEFAULT_WEIGHTS, TRANSACTIONS
from maximus.workloads.tpcc.mix import Deck, Weighted, make_mix, parse_mix

EXPECTED_BLOCK = {"new_order": 10, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1}


def test_deck_constant_is_the_specs_23_cards() -> None:
    assert DECK == EXPECTED_BLOCK
    assert sum(DECK.values()) == 23


@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_deck_gives_exactly_10_10_1_1_1_in_every_block_of_23(seed: int) -> None:
    deck = Deck(random.Random(seed))
    for block in range(2_000):
        cards = Counter(deck.next() for _ in range(23))
        assert cards == EXPECTED_BLOCK, (block, cards)


def test_deck_is_shuffled_between_blocks() -> None:
    deck = Deck(random.Random(5))
    blocks = {tuple(deck.next() for _ in range(23)) for _ in range(200)}
    assert len(blocks) > 190  # a reshuffle, not the same order replayed


def test_different_seeds_give_different_orders_and_same_seed_the_same() -> None:
    def order(seed: int) -> list[str]:
        deck = Deck(random.Random(seed))
        return [deck.next() for _ in range(230)]

    assert order(1) == order(1)
    assert order(1) != order(2)
    assert len({tuple(order(seed)) for seed in range(10)}) == 10


def test_deck_runs_of_a_rare_card_are_at_most_45_apart() -> None:
    """Without replacement, two Delivery cards are never more than 2*23-1 draws apart."""
    deck = Deck(random.Random(8))
    positions = [i for i in range(23 * 500) if deck.next() == "delivery"]
    assert len(positions) == 500
    assert max(b - a for a, b in zip(positions, positions[1:])) <= 45


@pytest.mark.parametrize("text", ["deck", "DECK", "  Deck  "])
def test_parse_mix_deck_is_none(text: str) -> None:
    assert parse_mix(text) is None


def test_make_mix_picks_deck_or_weighted() -> None:
    assert isinstance(make_mix(random.Random(1), None), Deck)
    assert isinstance(make_mix(random.Random(1), DEFAULT_WEIGHTS), Weighted)


def test_parse_mix_full_weights() -> None:
    weights = parse_mix("new_order=45,payment=43,order_status=4,delivery=4,stock_level=4")
    assert weights == {"new_order": 45.0, "payment": 43.0, "order_status": 4.0, "delivery": 4.0,
                       "stock_level": 4.0}
    assert list(weights) == list(TRANSACTIONS)


def test_parse_mix_fills_missing_with_zero_and_tolerates_spaces() -> None:
    weights = parse_mix(" payment = 50 , new_order=50.5")
    assert weights == {"new_order": 50.5, "payment": 50.0, "order_status": 0.0, "delivery": 0.0,
                       "stock_level": 0.0}
    assert list(weights) == list(TRANSACTIONS)


@pytest.mark.parametrize("text, fragment", [
    ("", "bad mix entry"),
    ("new_order", "bad mix entry"),
    ("neworder=45", "bad mix entry"),
    ("new_order=45;payment=43", "bad"),
    ("new_order=45,,payment=43", "bad mix entry"),
    ("new_order=lots", "bad weight"),
    ("new_order=", "bad weight"),
    ("new_order=-1,payment=50", "non-negative"),
    ("new_order=0,payment=0", "not all zero"),
    ("shuffle", "bad mix entry"),
])
def test_bad_mix_raises_a_one_line_user_error(text: str, fragment: str) -> None:
    with pytest.raises(UserError) as caught:
        parse_mix(text)
    message = str(caught.value)
    assert fragment in message
    assert message and "\n" not in message
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("text", ["new_order=nan,payment=43", "new_order=inf,payment=43"])
def test_non_finite_weight_is_a_user_error(text: str) -> None:
    with pytest.raises(UserError, match="finite"):
        parse_mix(text)


def test_a_transaction_named_twice_is_a_user_error() -> None:
    with pytest.raises(UserError, match="payment appears twice"):
        parse_mix("payment=1,payment=2")


def test_weighted_shares_within_one_point_over_100k_draws() -> None:
    weights = parse_mix("new_order=45,payment=43,order_status=4,delivery=4,stock_level=4")
    mix = Weighted(random.Random(77), weights)
    draws = 100_000
    counts = Counter(mix.next() for _ in range(draws))
    # sd of a 45 % share over 100k draws is 0.16 points: +-1 point is > 6 sd
    for name, weight in weights.items():
        assert abs(100.0 * counts[name] / draws - weight) <= 1.0, (name, counts[name])


def test_weighted_normalises_and_never_draws_zero_weight() -> None:
    mix = Weighted(random.Random(3), {"new_order": 3.0, "payment": 1.0, "order_status": 0.0,
                                      "delivery": 0.0, "stock_level": 0.0})
    counts = Counter(mix.next() for _ in range(40_000))
    assert set(counts) == {"new_order", "payment"}
    assert abs(counts["new_order"] / 40_000 - 0.75) < 0.01


def test_weighted_is_deterministic_per_seed() -> None:
    def order(seed: int) -> list[str]:
        mix = Weighted(random.Random(seed), DEFAULT_WEIGHTS)
        return [mix.next() for _ in range(200)]

    assert order(4) == order(4)
    assert order(4) != order(5)


@pytest.mark.parametrize("sizes", [(1, 22, 23, 64, 0, 5, 100), (23, 23, 46), (64,) * 10])
def test_a_dealt_batch_is_the_names_as_many_calls_of_next_give(sizes: tuple[int, ...]) -> None:
    """A busy terminal deals a batch's names at once (``deal``); the deck's reshuffles and the weighted
    choice's draws must fall where one call at a time puts them."""
    for make in (Deck, lambda rng: Weighted(rng, DEFAULT_WEIGHTS)):
        dealt, one_by_one = make(random.Random(3)), make(random.Random(3))
        for size in sizes:
            assert dealt.deal(size) == [one_by_one.next() for _ in range(size)]
        assert dealt.next() == one_by_one.next()
