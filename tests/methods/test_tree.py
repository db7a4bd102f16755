"""The RF-Agent search tree on a hand-made tree, against hand-computed values of the release's rules: λ annealing,
the backup, UCT with the self-verify softmax, leaf selection, tree-action plans."""

import pytest

from bird.components.tree import build_tree, rescale_counts, select_leaf, uct_lambda, uct_scores
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


# inserted in this order: root → a (1.0), root → b (1.5), a → a1 (0.0), a → a2 (3.0)
TREE = {"a": (None, 1.0), "b": (None, 1.5), "a1": ("a", 0.0), "a2": ("a", 3.0)}


@pytest.fixture(scope="module")
def tree_cfg(compose_cfg):
    return lambda *o: compose_cfg("method=rf_agent", *o)


def test_lambda_anneals_linearly_over_the_horizon_unclamped_as_the_release(tree_cfg):
    cfg = tree_cfg()  # λ 0.4 → 0.1 over 38 nodes (BIRD matched protocol)
    assert [round(uct_lambda(cfg, t), 6) for t in (0, 19, 38, 57)] == [0.4, 0.25, 0.1, -0.05]


def test_backup_blends_the_best_child_and_the_decayed_mean_of_backed_up_fitness(tree_cfg):
    """η 0.7, μ 0.15, N 38, by hand: a1 (0.0) inserted 3rd: decay 35/38, μd = 0.138158, a.q = 0.161842·1 + 0.7·0
    + 0.138158·0.5 = 0.230921; a2 (3.0) inserted 4th: μd = 0.134211, a.q = 0.165789·0.230921 + 0.7·3 + 0.134211·4/3
    = 2.317232. Visits count the node and every node inserted below it; the root counts them all."""
    tree = build_tree(tree_cfg(), _state(TREE))
    a = tree.nodes["a"]
    assert a.q == pytest.approx(2.317232, abs=1e-6) and a.visits == 3 and a.total == pytest.approx(4.0)
    assert tree.nodes["b"].q == 1.5 and tree.nodes["a2"].q == 3.0 and tree.nodes["<root>"].visits == 4
    assert tree.q_bounds() == (0.0, 3.0)


def test_uct_score_of_the_root_children_by_hand(tree_cfg):
    """λ(4 of 38) = 0.368421; a: 2.317232/3 + λ·sqrt(2 ln 5 / 3) + λ/2 = 1.338246; b: 0.5 + λ·sqrt(2 ln 5) + λ/2
    = 1.345204 (neither rated: the softmax of (−1, −1) gives each a half)."""
    scores = uct_scores(tree_cfg(), build_tree(tree_cfg(), _state(TREE)), "<root>")
    assert scores["a"] == pytest.approx(1.338246, abs=1e-5) and scores["b"] == pytest.approx(1.345204, abs=1e-5)


def test_uct_exploits_at_small_lambda_and_explores_at_large_lambda(tree_cfg):
    state = _state(TREE)
    # λ 0.3: a 1.233162 > b 1.188237, then under a: a2 (1.0 + ...) > a1 (0.0 + ...)
    assert select_leaf(tree_cfg("tree.lambda0=0.3", "tree.lambda_final=0.3"), state) == "a2"
    assert select_leaf(tree_cfg("tree.lambda0=0.5", "tree.lambda_final=0.5"), state) == "b"  # 1.540330 < 1.647062


def test_self_verify_enters_as_a_softmax_over_siblings(tree_cfg):
    """λ 0.3, b rated 1.0, a never rated (−1): softmax = (0.119203, 0.880797): a 1.118923 < b 1.302476."""
    state = _state(TREE)
    state.self_verify["b"] = 1.0
    lam = ("tree.lambda0=0.3", "tree.lambda_final=0.3")
    assert select_leaf(tree_cfg(*lam), state) == "b"
    assert select_leaf(tree_cfg(*lam, "feedback.self_verify=false"), state) == "a2"  # no verify term: 1.083 > 1.038


def test_max_depth_stops_the_descent_and_failed_nodes_count_at_failure_value(tree_cfg):
    lam = ("tree.lambda0=0.3", "tree.lambda_final=0.3")
    assert select_leaf(tree_cfg(*lam, "tree.max_depth=1"), _state(TREE)) == "a"  # a has children but sits at the cap
    failed = build_tree(tree_cfg(), _state({**TREE, "a2": ("a", None)}))  # a2 failed: a node at failure_value 0
    assert failed.nodes["a2"].score == 0.0 and failed.size == 4


def test_tree_actions_expand_one_leaf_with_every_action(tree_cfg):
    cfg = tree_cfg("tree.lambda0=0.3", "tree.lambda_final=0.3")
    state = _state(TREE, k=8)
    state.plan = Plan(8, 5, 1, 1, 1, 1, actions=rescale_counts(dict(cfg.tree.actions), 8))
    plans = get("sampling", "tree_actions")(cfg, state, 8)
    assert [p.operator for p in plans] == ["mutation_mechanism"] * 2 + ["mutation_param"] * 2 + \
        ["crossover_elite"] * 2 + ["path_reasoning", "different_thought"]
    assert {p.parents[0] for p in plans} == {"a2"}
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
