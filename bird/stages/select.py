"""Select: who carries forward (rule) and which candidate the search returns."""

from __future__ import annotations

from bird.config.schema import BirdConfig
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate, Report

__all__ = ["select"]


@register("select", "argmax")
def _argmax(cfg: BirdConfig, state: SearchState, cands: list[Candidate],
            reports: dict[str, Report]) -> str | None:
    """The iteration's best by fitness; ties go to the first index; None when nothing was ranked."""
    ranked = [c.id for c in cands if c.id in reports and reports[c.id].fitness is not None]
    if not ranked:
        return None
    return max(ranked, key=lambda cid: (reports[cid].fitness, -ranked.index(cid)))


@register("select", "none")
def _no_selection(cfg: BirdConfig, state: SearchState, cands: list[Candidate],
                  reports: dict[str, Report]) -> str | None:
    """Nothing is ranked (a single refinement chain)."""
    return None


@register("select", "mu_plus_lambda")
def _mu_plus_lambda(cfg: BirdConfig, state: SearchState, cands: list[Candidate],
                    reports: dict[str, Report]) -> str | None:
    """(μ+λ) truncation: the population store becomes the best `plan.population_size` of parents ∪ children
    by fitness (ties keep the older member); returns the best member."""
    children = [c.id for c in cands if c.id in reports and reports[c.id].fitness is not None]
    pool = state.population + [c for c in children if c not in state.population]
    order = {cid: i for i, cid in enumerate(pool)}
    pool.sort(key=lambda cid: (-(state.reports.get(cid, reports.get(cid)).fitness), order[cid]))  # type: ignore[union-attr]
    state.population = pool[: state.plan.population_size]
    return state.population[0] if state.population else None


def _improves(new: float | None, old: float | None) -> bool:
    """A strictly higher fitness (an equal one is no improvement); any fitness improves on none."""
    return new is not None and (old is None or new > old)


@register("returned", "global_best")
def _returned_global_best(state: SearchState, best: str | None, cands: list[Candidate]) -> str | None:
    """The strictly improving best over the whole search (ties keep the earlier one)."""
    if best is None:
        return state.returned
    current = state.fitness(state.returned)
    return best if current is None or _improves(state.fitness(best), current) else state.returned


@register("returned", "chain_end")
def _returned_chain_end(state: SearchState, best: str | None, cands: list[Candidate]) -> str | None:
    """The end of the chain: the candidate carried forward (the iteration's pick after the incumbent gate), or,
    when nothing is ranked, the latest candidate that trained successfully."""
    if best is not None:
        return best
    trained = [c.id for c in cands if c.alive and c.id in state.results]
    return trained[-1] if trained else state.returned


@register("returned", "final_incumbent")
def _returned_final_incumbent(state: SearchState, best: str | None, cands: list[Candidate]) -> str | None:
    """The latest generated candidate whose code passed the checks, trained or not (CARD's r_N)."""
    valid = [c.id for c in cands if c.code is not None and (c.alive or c.screened)]
    return valid[-1] if valid else state.returned


def _incumbent_gate(state: SearchState, best: str | None) -> str | None:
    """select.require_improvement_over_incumbent: the pick replaces the incumbent (the candidate carried forward so
    far) only with a strictly higher fitness; else the incumbent stays (safety-research/bird@54a9ce3:configs/hillclimb/v1.yaml)."""
    incumbent = state.iteration_best
    if best is None or incumbent is None or best == incumbent:
        return best if best is not None else incumbent
    new, old = state.fitness(best), state.fitness(incumbent)
    return best if old is None or (new is not None and new > old) else incumbent


def select(cfg: BirdConfig, state: SearchState, cands: list[Candidate], reports: dict[str, Report]) -> None:
    """Update the iteration best (the candidate carried forward), the global best and the returned candidate."""
    best = get("select", cfg.select.rule)(cfg, state, cands, reports)
    if cfg.select.require_improvement_over_incumbent:
        best = _incumbent_gate(state, best)
    if best is not None:
        state.iteration_best = best
        if state.global_best is None or _improves(state.fitness(best), state.fitness(state.global_best)):
            state.global_best = best
    state.returned = get("returned", cfg.select.returned)(state, best, cands)
