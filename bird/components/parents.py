"""Parent choice per sample from the population store (registry family parent)."""

from __future__ import annotations

import math
import random

from bird.config.schema import BirdConfig
from bird.registry import register
from bird.state import SearchState

__all__: list[str] = []


def _softmax_mate(cfg: BirdConfig, state: SearchState, first: str, rng: random.Random, temperature: float) -> str | None:
    """A second parent: the same softmax over the pool without the first parent."""
    return _draw(state, rng, temperature, exclude=first)


@register("parent", "softmax_fitness", mate=_softmax_mate)
def _softmax_fitness(cfg: BirdConfig, state: SearchState, rng: random.Random, temperature: float) -> str | None:
    """p(r) = exp(f(r)/T) / Σ exp(f(r')/T) over the population (every ranked candidate if there is none)."""
    return _draw(state, rng, temperature, exclude=None)


def _draw(state: SearchState, rng: random.Random, temperature: float, exclude: str | None) -> str | None:
    pool = [c for c in (state.population or list(state.reports)) if state.fitness(c) is not None and c != exclude]
    if not pool:
        return None
    fits = [state.fitness(c) / temperature for c in pool]  # type: ignore[operator]
    top = max(fits)
    weights = [math.exp(f - top) for f in fits]
    return rng.choices(pool, weights=weights, k=1)[0]
