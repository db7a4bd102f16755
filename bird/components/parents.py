"""Parent choice per sample from the population store (registry family parent)."""

from __future__ import annotations

import math
import random

from bird.config.schema import BirdConfig
from bird.registry import register
from bird.state import SearchState

__all__: list[str] = []


@register("parent", "softmax_fitness")
def _softmax_fitness(cfg: BirdConfig, state: SearchState, rng: random.Random, temperature: float) -> str | None:
    """p(r) = exp(f(r)/T) / Σ exp(f(r')/T) over the population (every ranked candidate if there is none)."""
    pool = [c for c in (state.population or list(state.reports)) if state.fitness(c) is not None]
    if not pool:
        return None
    fits = [state.fitness(c) / temperature for c in pool]  # type: ignore[operator]
    top = max(fits)
    weights = [math.exp(f - top) for f in fits]
    return rng.choices(pool, weights=weights, k=1)[0]
