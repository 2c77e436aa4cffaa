"""The transaction mix (5.2.3, 5.2.4): a shuffled 23-card deck by default, or named weights."""

from __future__ import annotations

import math
import random
from typing import Mapping, Protocol

from maximus.errors import UserError
from maximus.workloads.tpcc.constants import DECK, DEFAULT_WEIGHTS, TRANSACTIONS


class Mix(Protocol):
    def next(self) -> str:
        """The name of the next transaction this terminal runs."""

    def deal(self, count: int) -> list[str]:
        """The names of the next ``count`` transactions: those ``count`` calls of ``next()`` give."""


class Deck:
    """5.2.4.2: draw without replacement from a deck of cards, reshuffled when exhausted."""

    def __init__(self, rng: random.Random, cards: Mapping[str, int] = DECK) -> None:
        self._rng = rng
        self._cards = [name for name, count in cards.items() for _ in range(count)]
        self._position = len(self._cards)

    def next(self) -> str:
        if self._position == len(self._cards):
            self._rng.shuffle(self._cards)
            self._position = 0
        card = self._cards[self._position]
        self._position += 1
        return card

    def deal(self, count: int) -> list[str]:
        names: list[str] = []
        while len(names) < count:  # the rest of the deck, shuffled again when it is used up, as next() does
            if self._position == len(self._cards):
                self._rng.shuffle(self._cards)
                self._position = 0
            taken = self._cards[self._position:self._position + count - len(names)]
            self._position += len(taken)
            names += taken
        return names


class Weighted:
    """Weighted random choice with replacement (5.2.4.1 allows it; shares may then drift)."""

    def __init__(self, rng: random.Random, weights: Mapping[str, float]) -> None:
        self._rng = rng
        self._names = list(weights)
        self._cumulative = []
        total = 0.0
        for name in self._names:
            total += weights[name]
            self._cumulative.append(total)

    def next(self) -> str:
        return self._rng.choices(self._names, cum_weights=self._cumulative)[0]

    def deal(self, count: int) -> list[str]:
        return self._rng.choices(self._names, cum_weights=self._cumulative, k=count)  # one random() each, as next()


def parse_mix(text: str) -> dict[str, float] | None:
    """``"deck"`` -> None (the deck); ``"new_order=45,payment=43,..."`` -> validated weights."""
    if text.strip().lower() == "deck":
        return None
    weights: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if name in weights:
            raise UserError(f"{name} appears twice in the mix")
        if not sep or name not in TRANSACTIONS:
            raise UserError(f"bad mix entry {part.strip()!r}: expected NAME=WEIGHT with NAME one of "
                            f"{', '.join(TRANSACTIONS)}, or the word deck")
        try:
            weights[name] = float(value)
        except ValueError:
            raise UserError(f"bad weight {value.strip()!r} for {name} in the mix: expected a number") from None
    if not all(math.isfinite(w) and w >= 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise UserError("mix weights must be finite, non-negative and not all zero")
    return {name: weights.get(name, 0.0) for name in TRANSACTIONS}


def make_mix(rng: random.Random, weights: Mapping[str, float] | None) -> Mix:
    return Deck(rng) if weights is None else Weighted(rng, weights)


__all__ = ["DEFAULT_WEIGHTS", "Deck", "Mix", "Weighted", "make_mix", "parse_mix"]
