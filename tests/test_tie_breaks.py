"""Every selection rule's tie-break (docs/selection.md, "Ties"), each on tied inputs where the plausible other rule
gives another answer: ids ordered against the rule, creation order against island order, equal scores everywhere.
At small budgets every candidate often scores 0.0, so these decide whole searches."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from bird.components.islands import admit, migrate
from bird.components.operators import draw_mate
from bird.components.tree import _elite, build_tree, rescale_counts, select_leaf
from bird.registry import get
from bird.stages.select import select
from bird.state import Plan, SearchState
from bird.types import Candidate, Report


def _state(fitness: dict[str, float | None], population: int = 2, parents: dict[str, str] | None = None,
           iteration: int = 1) -> SearchState:
    """Candidates created in the dict's order (index = position), with these fitness values."""
    state = SearchState(None, Plan(2, 5, 1, 1, 1, 1, population_size=population), 0, {})  # type: ignore[arg-type]
    state.iteration = iteration
    for i, (cid, f) in enumerate(fitness.items()):
        state.candidates[cid] = Candidate(cid, iteration, i, [], code="x", parent_id=(parents or {}).get(cid))
        if f is not None:
            state.reports[cid] = Report(cid, f, "")
    return state


def _cands(state: SearchState, *ids: str) -> list[Candidate]:
    return [state.candidates[c] for c in ids]


@pytest.fixture(scope="module")
def cfg(compose_cfg):
    return lambda *o: compose_cfg(*o)


# -- the iteration's pick and the global best ---------------------------------------------------------------
def test_argmax_gives_a_tie_to_the_first_generated_candidate_not_the_first_id(cfg):
    state = _state({"z": 0.0, "a": 0.0, "m": -1.0})  # generated z, a, m; ids sort the other way
    assert get("select", "argmax")(cfg(), state, _cands(state, "z", "a", "m"), state.reports) == "z"


def test_an_equal_score_does_not_replace_the_global_best_or_the_returned_reward(cfg):
    state = _state({"old": 0.25, "new1": 0.25, "new2": 0.25}, iteration=2)
    state.global_best = state.returned = state.iteration_best = "old"
    select(cfg("select.returned=global_best"), state, _cands(state, "new1", "new2"), state.reports)
    assert state.iteration_best == "new1"  # the iteration's own pick is carried forward (Eureka's parent)
    assert state.global_best == "old" and state.returned == "old"  # equal is no improvement


def test_a_fitness_of_exactly_zero_improves_on_a_negative_global_best(cfg):
    state = _state({"old": -1.0, "new": 0.0}, iteration=2)  # 0.0 was once read as "no fitness" (-inf)
    state.global_best = state.returned = state.iteration_best = "old"
    select(cfg("select.returned=global_best"), state, _cands(state, "new"), state.reports)
    assert state.global_best == "new" and state.returned == "new"


def test_the_incumbent_gate_keeps_the_incumbent_on_an_equal_score(cfg):
    state = _state({"inc": 0.5, "pick": 0.5}, iteration=2)
    state.iteration_best = state.global_best = "inc"
    select(cfg("select.require_improvement_over_incumbent=true"), state, _cands(state, "pick"), state.reports)
    assert state.iteration_best == "inc"


def test_mu_plus_lambda_ranks_older_members_then_children_in_generation_order_among_equals():
    state = _state({"p": 0.0, "c2": 0.0, "c1": 0.0}, population=2)
    state.population = ["p"]
    rule = get("select", "mu_plus_lambda")
    assert rule(None, state, _cands(state, "c2", "c1"), state.reports) == "p"
    assert state.population == ["p", "c2"]


# -- islands (REvolve) --------------------------------------------------------------------------------------
def test_island_lineage_picks_the_lowest_index_child_on_ties(cfg):
    state = _state({"y": 1.0, "b": 1.0})
    c = cfg("method=revolve")
    assert get("select", "island_lineage")(c, state, _cands(state, "y", "b"), state.reports) == "y"


def test_admission_needs_a_strictly_better_score(cfg):
    state = _state({"a": 1.0, "b": 1.0, "x": 1.0, "y": 1.0})
    state.islands = [["a", "b"]]
    state.candidates["x"].parent_id = state.candidates["y"].parent_id = "a"
    assert not admit(cfg("method=revolve"), state, state.candidates["x"])["admitted"]  # equal to the mean
    assert not admit(cfg("method=revolve", "islands.admission=above_island_best"), state,
                     state.candidates["y"])["admitted"]  # equal to the best


def test_an_overfull_island_drops_the_newest_of_its_equally_weak_members(cfg):
    state = _state({"old": 1.0, "mid": 1.0, "top": 3.0, "x": 5.0}, parents={"x": "top"})
    state.islands = [["old", "mid", "top"]]
    out = admit(cfg("method=revolve", "islands.population_size=3"), state, state.candidates["x"])
    assert out["dropped"] == "mid" and state.islands == [["old", "top", "x"]]


def test_migration_sends_the_earliest_of_equally_good_members_and_the_target_drops_its_newest_weakest(cfg):
    state = _state({"a": 2.0, "b": 2.0, "c": 1.0, "d": 1.0})
    state.islands = [["a", "b"], ["c", "d"]]
    moves = migrate(cfg("method=revolve", "islands.population_size=2", "islands.migration_rate=0.5"), state)
    # island 0 sends a (not b); island 1, overfull, drops d (its newest of the weakest c, d); island 1 sends c,
    # which island 0 drops at once (the weakest there)
    assert moves == [{"id": "a", "from": 0, "to": 1, "kept": True}, {"id": "c", "from": 1, "to": 0, "kept": False}]
    assert state.islands == [["a", "b"], ["c", "a"]]


def test_archive_best_breaks_ties_by_creation_order_not_by_island_order():
    state = _state({"b": 7.0, "c": 7.0, "a": 1.0})  # b created before c, but c sits on the first island
    state.islands = [["c"], ["b", "a"]]
    assert get("returned", "archive_best")(state, None, []) == "b"


def _shares(draws: list[str]) -> dict[str, float]:
    n = len(draws)
    return {k: v / n for k, v in Counter(draws).items()}


def test_island_cohort_parents_among_equals_are_drawn_uniformly(cfg):
    c = cfg("method=revolve")
    state = _state({"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0})
    state.islands = [["a", "b"], ["c"], ["d"]]
    rng = random.Random(0)
    draws = [get("parent", "archive_island_cohort")(c, state, rng, 1.0) for _ in range(3000)]
    shares = _shares(draws)  # island 1/3 each, then a member: a, b 1/6 each; c, d 1/3 each
    assert shares["c"] == pytest.approx(1 / 3, abs=0.04) and shares["a"] == pytest.approx(1 / 6, abs=0.04)
    mates = Counter(draw_mate(c, state, "archive_island_cohort", "a", rng, 1.0) for _ in range(50))
    assert set(mates) == {"b"}


# -- softmax parents and crossover parents (R*) -------------------------------------------------------------
def test_softmax_parents_and_their_mates_among_equals_are_uniform(cfg):
    state = _state({"a": 0.0, "b": 0.0, "c": 0.0})
    state.population = ["a", "b", "c"]
    rng, c = random.Random(1), cfg()
    shares = _shares([get("parent", "softmax_fitness")(c, state, rng, 1.0) for _ in range(3000)])
    assert all(s == pytest.approx(1 / 3, abs=0.04) for s in shares.values()) and len(shares) == 3
    mates = _shares([draw_mate(c, state, "softmax_fitness", "a", rng, 1.0) for _ in range(2000)])
    assert set(mates) == {"b", "c"} and mates["b"] == pytest.approx(0.5, abs=0.05)


def test_crossover_parents_are_a_function_of_seed_iteration_and_slot(cfg):
    from bird.components.crossover import _rng

    state = _state({"a": 0.0, "b": 0.0, "c": 0.0}, iteration=2)
    c = cfg("method=rstar")

    def draw(slot: int) -> tuple:
        rng = _rng(state, slot, 0)
        first = get("parent", c.crossover.parent)(c, state, rng, c.crossover.temperature)
        return first, draw_mate(c, state, c.crossover.parent, first, rng, c.crossover.temperature)

    pairs = [draw(s) for s in range(12)]
    assert [draw(s) for s in range(12)] == pairs  # the same parents again (a resumed or replayed search)
    assert len(set(pairs)) > 1  # equals are drawn, not always the first pair


# -- the search tree (RF-Agent) -----------------------------------------------------------------------------
def test_uct_descends_to_the_first_created_of_equal_children(cfg):
    c = cfg("method=rf_agent")
    state = _state({"z": 1.0, "a": 1.0}, iteration=2)  # two root children, equal in value and visits
    assert select_leaf(c, state) == "z"


def test_the_elite_cut_keeps_the_earliest_of_equal_nodes(cfg):
    c = cfg("method=rf_agent", "tree.elite_size=1")
    state = _state({"leaf": 0.0, "z": 1.0, "a": 1.0}, iteration=2)
    tree = build_tree(c, state)
    assert {_elite(c, tree, "leaf", random.Random(s)) for s in range(10)} == {"z"}


def test_tree_action_counts_give_remainder_ties_to_the_action_listed_first():
    assert rescale_counts({"y_action": 1, "x_action": 1}, 1) == ("y_action",)
    assert rescale_counts({"y_action": 1, "x_action": 1, "w_action": 1}, 2) == ("y_action", "x_action")
