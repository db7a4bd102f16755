"""REvolve's island population: admission above the island mean, lineage, migration on the admission clock, the
island-cohort parent draw and the archive-best return rule."""

import random

import pytest

from bird.components.islands import admit, migrate
from bird.registry import declared, get
from bird.state import Plan, SearchState
from bird.types import Candidate, Report


@pytest.fixture(scope="module")
def island_cfg(compose_cfg):
    return lambda *o: compose_cfg("method=revolve", *o)


def _state(islands: list[list[str]], fitness: dict[str, float]) -> SearchState:
    state = SearchState(None, Plan(2, 5, 1, 1, 1, 1), 0, {})  # type: ignore[arg-type]
    for cid, f in fitness.items():
        state.candidates[cid] = Candidate(cid, 1, 0, [], code="x")
        state.reports[cid] = Report(cid, f, "")
    state.islands = [list(m) for m in islands]
    return state


def _child(state: SearchState, cid: str, fitness: float, parent: str | None, *co: str) -> Candidate:
    cand = Candidate(cid, 2, len(state.candidates), [], code="x", parent_id=parent, co_parents=co)
    state.candidates[cid] = cand
    state.reports[cid] = Report(cid, fitness, "")
    return cand


def test_a_child_enters_its_parents_island_only_above_the_island_mean(island_cfg):
    cfg = island_cfg()
    state = _state([["a", "b"], ["c"]], {"a": 1.0, "b": 3.0, "c": 10.0})  # island 0 mean 2.0
    assert not admit(cfg, state, _child(state, "y", 2.0, "b"))["admitted"]  # equal to the mean: out
    assert admit(cfg, state, _child(state, "x", 2.5, "a")) == {"id": "x", "island": 0, "admitted": True,
                                                               "dropped": None}
    assert admit(cfg, state, _child(state, "z", 9.0, "c"))["admitted"] is False  # island 1's mean is 10
    assert state.islands == [["a", "b", "x"], ["c"]] and state.island_admissions == 1


def test_an_overfull_island_drops_its_weakest_member(island_cfg):
    cfg = island_cfg("islands.population_size=2")
    state = _state([["a", "b"]], {"a": 1.0, "b": 3.0})
    assert admit(cfg, state, _child(state, "x", 5.0, "b"))["dropped"] == "a"
    assert state.islands == [["b", "x"]]


def test_a_fresh_child_goes_to_the_smallest_island_and_a_crossover_child_to_a_parents_island(island_cfg):
    cfg = island_cfg()
    state = _state([["a"], [], ["c"]], {"a": 1.0, "c": 1.0})
    assert admit(cfg, state, _child(state, "fresh", 0.0, None))["island"] == 1
    assert admit(cfg, state, _child(state, "xo", 5.0, "gone", "c"))["island"] == 2  # first parent left


def test_migration_copies_each_islands_best_to_the_next_island(island_cfg):
    cfg = island_cfg("islands.population_size=2", "islands.migration_rate=0.5")  # ⌈0.5·2⌉ = 1 migrant each
    state = _state([["a", "b"], ["c"], ["d", "e"]], {"a": 1.0, "b": 4.0, "c": 2.0, "d": 0.5, "e": 3.0})
    moves = migrate(cfg, state)
    assert [(m["id"], m["from"], m["to"]) for m in moves] == [("b", 0, 1), ("c", 1, 2), ("e", 2, 0)]
    assert state.islands == [["b", "e"], ["c", "b"], ["e", "c"]]  # full islands dropped a and d


def test_island_lineage_migrates_on_the_admission_clock(island_cfg):
    cfg = island_cfg("islands.n_islands=2", "islands.migration_interval=2")
    state = _state([], {})
    rule = get("select", "island_lineage")
    first = [_child(state, "p", 1.0, None), _child(state, "q", 2.0, None)]
    assert rule(cfg, state, first, state.reports) == "q"
    assert state.islands == [["p", "q"], ["q", "p"]]  # 2 admissions → the best of each island moved over
    assert state.island_admissions == 0 and "migration" in state.island_log[-1]["events"][-1]


def test_island_cohort_draws_from_non_empty_islands_and_mates_within_the_island(island_cfg):
    cfg = island_cfg()
    state = _state([["a", "b"], [], ["c"]], {"a": 1.0, "b": 2.0, "c": 5.0})
    parent = get("parent", "archive_island_cohort")
    rng = random.Random(0)
    draws = [parent(cfg, state, rng, 1.0) for _ in range(600)]
    assert set(draws) == {"a", "b", "c"}
    assert draws.count("c") > draws.count("a") + draws.count("b")  # island 2's mean (5) beats island 0's (1.5)
    mate = declared("parent", "archive_island_cohort").mate
    assert {mate(cfg, state, "a", rng, 1.0) for _ in range(20)} == {"b"}
    assert mate(cfg, state, "c", rng, 1.0) is None  # alone on its island
    assert parent(cfg, _state([[], []], {}), rng, 1.0) is None


def test_archive_best_is_the_best_member_of_any_island_earliest_on_ties():
    state = _state([["a", "b"], ["c"]], {"a": 1.0, "b": 7.0, "c": 7.0, "gone": 99.0})  # "gone" left the islands
    assert get("returned", "archive_best")(state, None, []) == "b"
    assert get("returned", "archive_best")(_state([], {}), None, []) is None
