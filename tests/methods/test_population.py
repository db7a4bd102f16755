"""(μ+λ) survival over the population store, softmax parent sampling, and the final-incumbent return rule."""

import random

from bird.registry import get
from bird.state import Plan, SearchState
from bird.types import Candidate, Failure, FailureKind, Report


def _state(p: int) -> SearchState:
    return SearchState(None, Plan(3, 5, 1, 1, 1, 1, population_size=p), 0, {})  # type: ignore[arg-type]


def _add(state, cid, fitness):
    cand = Candidate(cid, 1, 0, [], code="x")
    state.candidates[cid] = cand
    state.reports[cid] = Report(cid, fitness, "")
    return cand


def test_mu_plus_lambda_keeps_the_best_p_of_parents_and_children():
    state = _state(2)
    rule = get("select", "mu_plus_lambda")
    gen1 = [_add(state, "a", -1.0), _add(state, "b", -3.0), _add(state, "c", -2.0)]
    assert rule(None, state, gen1, state.reports) == "a" and state.population == ["a", "c"]
    gen2 = [_add(state, "d", -1.5), _add(state, "e", -0.5), _add(state, "f", -9.0)]
    assert rule(None, state, gen2, state.reports) == "e" and state.population == ["e", "a"]


def test_ties_keep_the_older_member_and_unranked_children_never_enter():
    state = _state(1)
    rule = get("select", "mu_plus_lambda")
    rule(None, state, [_add(state, "a", -1.0)], state.reports)
    late = _add(state, "b", -1.0)
    failed = Candidate("z", 2, 1, [])
    rule(None, state, [late, failed], state.reports)
    assert state.population == ["a"]


def test_softmax_parent_follows_fitness():
    state = _state(3)
    for cid, f in (("a", 0.0), ("b", -1.0), ("c", -50.0)):
        _add(state, cid, f)
    state.population = ["a", "b", "c"]
    rng = random.Random(0)
    draws = [get("parent", "softmax_fitness")(None, state, rng, 1.0) for _ in range(4000)]
    share = draws.count("a") / len(draws)
    assert abs(share - 1 / (1 + 2.718281828 ** -1)) < 0.03 and "c" not in draws


def test_final_incumbent_returns_the_latest_valid_candidate_trained_or_not():
    state = _state(1)
    screened = Candidate("it2-c0", 2, 0, [], code="x", failure=Failure(FailureKind.SCREENED, "tpe"))
    broken = Candidate("it3-c0", 3, 0, [], code="x", failure=Failure(FailureKind.RUNTIME_ERROR, "boom"))
    rule = get("returned", "final_incumbent")
    assert rule(state, None, [screened]) == "it2-c0"
    state.returned = "it2-c0"
    assert rule(state, None, [broken]) == "it2-c0"
