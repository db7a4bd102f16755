"""An island population with lineage (REvolve): each island keeps its own members; a child joins its parent's island
when the admission rule lets it in; parents are drawn island first, weighted by island mean fitness; every
islands.migration_interval admissions the best members of each island are copied to the next one (a ring).
The archive is the union of the islands; select.returned=archive_best returns its best member."""

from __future__ import annotations

import math
import random
from statistics import fmean

from bird.config.schema import BirdConfig
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate, Report

__all__ = ["admit", "migrate", "island_of", "shifted_weights"]


# -- admission: fn(fitness, members' fitness) -> bool ----------------------------------------------------------
@register("admission", "above_island_mean")
def _above_mean(fitness: float, members: list[float]) -> bool:
    """An empty island takes anyone; otherwise the child must beat the island's mean fitness."""
    return not members or fitness > fmean(members)


@register("admission", "above_island_best")
def _above_best(fitness: float, members: list[float]) -> bool:
    return not members or fitness > max(members)


@register("admission", "truncate")
def _truncate(fitness: float, members: list[float]) -> bool:
    """Everyone enters; an overfull island drops its weakest member."""
    return True


def shifted_weights(values: list[float]) -> list[float]:
    """Sampling weights ∝ value − min + ε (ε = 10% of the spread, or 1 when all are equal) [ours]: order-preserving
    for any sign and scale of fitness, and never zero."""
    lo, hi = min(values), max(values)
    eps = 0.1 * (hi - lo) if hi > lo else 1.0
    return [v - lo + eps for v in values]


def island_of(state: SearchState, cid: str | None) -> int | None:
    for i, members in enumerate(state.islands):
        if cid in members:
            return i
    return None


def _fitness(state: SearchState, cid: str) -> float:
    f = state.fitness(cid)
    return -math.inf if f is None else f


def admit(cfg: BirdConfig, state: SearchState, cand: Candidate) -> dict:
    """Offer one ranked child to its lineage's island (its first parent's, else a co-parent's, else the smallest
    island [ours]); an admitted child pushes out the weakest member of an overfull island (the newest of equals)."""
    home = island_of(state, cand.parent_id)
    for other in cand.co_parents:
        home = home if home is not None else island_of(state, other)
    if home is None:
        home = min(range(len(state.islands)), key=lambda i: (len(state.islands[i]), i))
    members = state.islands[home]
    ok = get("admission", cfg.islands.admission)(_fitness(state, cand.id), [_fitness(state, m) for m in members])
    dropped = None
    if ok:
        members.append(cand.id)
        state.island_admissions += 1
        if len(members) > cfg.islands.population_size:
            dropped = min(reversed(members), key=lambda m: _fitness(state, m))
            members.remove(dropped)
    return {"id": cand.id, "island": home, "admitted": ok, "dropped": dropped}


def migrate(cfg: BirdConfig, state: SearchState) -> list[dict]:
    """Each island copies its best ⌈migration_rate × population_size⌉ members to the next island (a ring), where
    they enter as admitted children do."""
    n_move = max(1, math.ceil(cfg.islands.migration_rate * cfg.islands.population_size))
    best = [sorted(m, key=lambda c: -_fitness(state, c))[:n_move] for m in state.islands]
    moves = []
    for i, group in enumerate(best):
        target = state.islands[(i + 1) % len(state.islands)]
        for cid in group:
            if cid in target:
                continue
            target.append(cid)
            if len(target) > cfg.islands.population_size:
                target.remove(min(reversed(target), key=lambda m: _fitness(state, m)))
            moves.append({"id": cid, "from": i, "to": (i + 1) % len(state.islands), "kept": cid in target})
    return moves


@register("select", "island_lineage")
def _island_lineage(cfg: BirdConfig, state: SearchState, cands: list[Candidate],
                    reports: dict[str, Report]) -> str | None:
    """Offer each ranked child to its island (admission), migrate on the admission clock; return the iteration's
    best child (argmax, first on ties), which drives iteration_best / global_best as argmax does."""
    if not state.islands:
        state.islands = [[] for _ in range(cfg.islands.n_islands)]
    ranked = [c for c in cands if c.id in reports and reports[c.id].fitness is not None]
    log = []
    for cand in ranked:
        log.append(admit(cfg, state, cand))
        every = cfg.islands.migration_interval
        if every and state.island_admissions >= every:
            state.island_admissions = 0
            log.append({"migration": migrate(cfg, state)})
    state.island_log.append({"iteration": state.iteration, "events": log,
                             "islands": [list(m) for m in state.islands]})
    if not ranked:
        return None
    return max(ranked, key=lambda c: (reports[c.id].fitness, -c.index)).id


def _cohort_mate(cfg: BirdConfig, state: SearchState, first: str, rng: random.Random,
                 temperature: float) -> str | None:
    """A second parent from the first parent's island (∝ fitness); None when the island has no other member."""
    home = island_of(state, first)
    others = [c for c in state.islands[home] if c != first] if home is not None else []
    if not others:
        return None
    return rng.choices(others, weights=shifted_weights([_fitness(state, c) for c in others]), k=1)[0]


@register("parent", "archive_island_cohort", mate=_cohort_mate)
def _island_cohort(cfg: BirdConfig, state: SearchState, rng: random.Random, temperature: float) -> str | None:
    """An island drawn with weight ∝ its mean fitness (shifted_weights), then a member ∝ its fitness; None while
    every island is empty."""
    islands = [i for i, m in enumerate(state.islands) if m]
    if not islands:
        return None
    means = [fmean(_fitness(state, c) for c in state.islands[i]) for i in islands]
    island = state.islands[rng.choices(islands, weights=shifted_weights(means), k=1)[0]]
    return rng.choices(island, weights=shifted_weights([_fitness(state, c) for c in island]), k=1)[0]


@register("returned", "archive_best")
def _archive_best(state: SearchState, best: str | None, cands: list[Candidate]) -> str | None:
    """The best member of the archive (the union of the islands); the earliest on ties."""
    members = [c for island in state.islands for c in island]
    order = {cid: i for i, cid in enumerate(state.candidates)}
    ranked = sorted(set(members), key=lambda c: (-_fitness(state, c), order.get(c, 0)))
    return ranked[0] if ranked else state.returned
