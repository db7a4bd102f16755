"""The RF-Agent search tree on a hand-made tree: λ annealing, node values, UCT leaf selection, tree-action plans."""

import pytest

from bird.components.tree import build_tree, node_values, rescale_counts, select_leaves, uct_lambda
from bird.registry import get
from bird.state import Plan, SearchState
from bird.types import Candidate, Failure, FailureKind, Report


def _state(nodes: dict[str, tuple[str | None, float | None]], k: int = 2) -> SearchState:
    """nodes: id -> (parent id, fitness; None = a failed candidate)."""
    state = SearchState(None, Plan(k, 5, 1, 1, 1, 1), 0, {})  # type: ignore[arg-type]
    for cid, (parent, fitness) in nodes.items():
        failure = None if fitness is not None else Failure(FailureKind.RUNTIME_ERROR, "boom")
        state.candidates[cid] = Candidate(cid, 1, 0, [], code="x", parent_id=parent, failure=failure)
        if fitness is not None:
            state.reports[cid] = Report(cid, fitness, "")
    state.iteration = 3
    return state


# root → a (1.0) → {a1 (0.0), a2 (3.0)};  root → b (1.5).  Normalised over [0, 3]: a 1/3, b 1/2, a1 0, a2 1.
TREE = {"a": (None, 1.0), "b": (None, 1.5), "a1": ("a", 0.0), "a2": ("a", 3.0)}


@pytest.fixture(scope="module")
def tree_cfg(compose_cfg):
    return lambda *o: compose_cfg("method=rf_agent", *o)


def test_lambda_anneals_linearly_from_lambda0_to_lambda_final_over_the_horizon(tree_cfg):
    cfg = tree_cfg()  # λ 0.4 → 0.1 over 38 trainings (BIRD matched protocol)
    assert [round(uct_lambda(cfg, t), 6) for t in (0, 19, 38, 50)] == [0.4, 0.25, 0.1, 0.1]


def test_node_values_mix_subtree_best_subtree_mean_and_own_value(tree_cfg):
    values = node_values(tree_cfg(), build_tree(tree_cfg(), _state(TREE)))  # weights 0.7 / 0.15 / 0.15
    assert values["a"] == pytest.approx(0.7 * 1 + 0.15 * (1 / 3 + 0 + 1) / 3 + 0.15 * (1 / 3))
    assert values["b"] == pytest.approx(0.5)
    assert values["a2"] == pytest.approx(1.0) and values["a1"] == pytest.approx(0.0)


def test_uct_exploits_at_small_lambda_and_explores_at_large_lambda(tree_cfg):
    # UCT(a) = 0.8167 + λ·sqrt(ln 4 / 3), UCT(b) = 0.5 + λ·sqrt(ln 4 / 1): b wins once λ > 0.636
    state = _state(TREE)
    assert select_leaves(tree_cfg("tree.lambda0=0.4", "tree.lambda_final=0.4"), state, 1) == ["a2"]
    assert select_leaves(tree_cfg("tree.lambda0=0.7", "tree.lambda_final=0.7"), state, 1) == ["b"]
    # annealed: 4 nodes trained; λ(4) = 1.0 − 0.8·4/8 = 0.6 (exploit) vs 1.0 − 0.8·4/40 = 0.92 (explore)
    anneal = ("tree.lambda0=1.0", "tree.lambda_final=0.2")
    assert select_leaves(tree_cfg(*anneal, "tree.horizon_trainings=8"), state, 1) == ["a2"]
    assert select_leaves(tree_cfg(*anneal, "tree.horizon_trainings=40"), state, 1) == ["b"]
    # four failed candidates (value 0, never expanded) train no policy and do not advance λ: λ(4 of 12) = 0.733
    # explores (b); counted as trainings, λ(8 of 12) = 0.467 would exploit (a2)
    failed = _state({**TREE, **{f"f{i}": (None, None) for i in range(4)}})
    assert select_leaves(tree_cfg(*anneal, "tree.horizon_trainings=12"), failed, 1) == ["b"]


def test_leaves_at_max_depth_and_failed_nodes_are_never_expanded(tree_cfg):
    assert select_leaves(tree_cfg("tree.max_depth=2"), _state(TREE), 1) == ["b"]
    failed = {**TREE, "a2": ("a", None)}  # a2 failed: counts with failure_value 0, never expanded
    assert "a2" not in select_leaves(tree_cfg(), _state(failed), 2)


def test_several_leaves_per_iteration_are_distinct(tree_cfg):
    leaves = select_leaves(tree_cfg(), _state(TREE), 3)
    assert len(leaves) == len(set(leaves)) == 3 and set(leaves) == {"a1", "a2", "b"}


def test_tree_actions_plan_splits_the_samples_over_the_selected_leaves(tree_cfg):
    cfg = tree_cfg()
    state = _state(TREE, k=8)
    state.plan = Plan(8, 5, 1, 1, 1, 1, actions=rescale_counts(dict(cfg.tree.actions), 8))
    plans = get("sampling", "tree_actions")(cfg, state, 8)
    assert [p.operator for p in plans] == ["mutation_mechanism"] * 2 + ["mutation_param"] * 2 + \
        ["crossover_elite"] * 2 + ["path_reasoning", "different_thought"]
    assert {p.parents[0] for p in plans[:4]} == {"a2"} and {p.parents[0] for p in plans[4:]} == {"b"}
    assert all(len(p.parents) == 2 and p.parents[1] != p.parents[0] for p in plans if p.operator == "crossover_elite")


def test_an_empty_tree_expands_the_root_with_fresh_samples(tree_cfg):
    plans = get("sampling", "tree_actions")(tree_cfg(), _state({}), 2)
    assert [p.operator for p in plans] == ["sample", "sample"]


def test_action_counts_rescale_to_the_plans_k_by_largest_remainder():
    counts = {"mutation_mechanism": 2, "mutation_param": 2, "crossover_elite": 2, "path_reasoning": 1,
              "different_thought": 1}
    assert rescale_counts(counts, 8) == ("mutation_mechanism",) * 2 + ("mutation_param",) * 2 + \
        ("crossover_elite",) * 2 + ("path_reasoning", "different_thought")
    assert rescale_counts(counts, 2) == ("mutation_mechanism", "mutation_param")
    assert rescale_counts(counts, 4) == ("mutation_mechanism", "mutation_param", "crossover_elite", "path_reasoning")
