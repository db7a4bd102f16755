"""Demo fitness on hand-made demo sets with known answers, and the misscored-state sampler."""

import math

import numpy as np
import pytest

from bird.components.demo_fitness import airl_loglik, pairwise_accuracy, worst_rows
from bird.components.demos import DemoScores, Episodes


def test_perfect_separation():
    pos, neg = np.array([10.0, 10.0]), np.array([-10.0, -10.0])
    assert pairwise_accuracy(pos, neg) == 1.0
    assert airl_loglik(pos, neg) == pytest.approx(2 * -math.log1p(math.exp(-10)))


def test_constant_reward_is_chance():
    z = np.zeros(3)
    assert pairwise_accuracy(z, z) == 0.5
    assert airl_loglik(z, z) == pytest.approx(2 * math.log(0.5))


def test_pairwise_counts_ties_as_half_and_inversions_as_zero():
    assert pairwise_accuracy(np.array([1.0, -1.0]), np.array([0.0])) == 0.5
    assert pairwise_accuracy(np.array([0.0]), np.array([0.0, 1.0])) == 0.25
    assert pairwise_accuracy(np.array([]), np.array([1.0])) is None


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x))


def test_airl_is_class_balanced():
    # 1 positive, 3 negatives: each class mean counts once
    got = airl_loglik(np.array([0.0]), np.array([0.0, 0.0, 0.0]))
    assert got == pytest.approx(2 * math.log(0.5))


def test_airl_weights_each_class_mean_once_when_classes_differ_in_size():
    pos, neg = [2.0], [-1.0, 3.0, 0.0]  # one expert state, three negatives, all terms different
    balanced = _log_sigmoid(2.0) + (_log_sigmoid(1.0) + _log_sigmoid(-3.0) + _log_sigmoid(0.0)) / 3
    pooled = (_log_sigmoid(2.0) + _log_sigmoid(1.0) + _log_sigmoid(-3.0) + _log_sigmoid(0.0)) / 4
    assert balanced == pytest.approx(-1.478593, abs=1e-6) and abs(balanced - pooled) > 0.4
    assert airl_loglik(np.array(pos), np.array(neg)) == pytest.approx(balanced, rel=1e-12)
    # the classes are not interchangeable: swapping them scores the reward's mistakes
    swapped = _log_sigmoid(-1.0) + (_log_sigmoid(-2.0) + _log_sigmoid(-1.0) + _log_sigmoid(-3.0)) / 3
    assert airl_loglik(np.array([-1.0]), np.array([2.0, 1.0, 3.0])) == pytest.approx(swapped, rel=1e-12)


def test_worst_rows_are_the_lowest_likelihood_states_balanced_by_class():
    eps = Episodes(np.zeros((40, 2)), np.repeat([0, 1], 20), np.tile(np.arange(20), 2),
                   np.repeat([1, -1], 20), ["expert", "random"])
    reward = np.concatenate([np.arange(20.0), -np.arange(20.0)])  # expert 0 and negative 20 are the worst
    rows = worst_rows(DemoScores(eps, reward), 2, "c")  # one of the 10 worst of each class
    assert len(rows) == 2 and rows[0] < 10 and 20 <= rows[1] < 30
    many = worst_rows(DemoScores(eps, reward), 8, "c")
    assert len(many) == 8 and sum(r < 20 for r in many) == 4


def test_state_terms_score_each_class_and_leave_dropped_states_at_zero():
    from bird.components.demo_fitness import state_loglik

    got = state_loglik(np.array([2.0, 2.0, 5.0, -1.0]), np.array([1, -1, 0, -1]))
    np.testing.assert_allclose(got, [_log_sigmoid(2.0), _log_sigmoid(-2.0), 0.0, _log_sigmoid(1.0)])


def test_airl_needs_both_classes():
    assert airl_loglik(np.array([]), np.array([1.0])) is None
    assert airl_loglik(np.array([1.0]), np.array([])) is None
    assert pairwise_accuracy(np.array([1.0]), np.array([])) is None


def test_fitness_components_read_the_demo_scores_of_the_evidence():
    from bird.components.fitness import Evidence
    from bird.registry import get

    eps = Episodes(np.zeros((4, 1)), np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([1, 1, -1, 0]),
                   ["expert", "random"])
    ev = Evidence((), "max", DemoScores(eps, np.array([3.0, -1.0, 0.5, 100.0])))
    assert get("fitness", "demo_airl")(ev) == pytest.approx(
        (_log_sigmoid(3.0) + _log_sigmoid(-1.0)) / 2 + _log_sigmoid(-0.5))
    assert get("fitness", "demo_pairwise")(ev) == 0.5  # 3 > 0.5, -1 < 0.5; the dropped 100 is ignored
    assert get("fitness", "demo_airl")(Evidence((), "max")) is None
    assert get("fitness", "demo_pairwise")(Evidence((), "max")) is None


def test_worst_rows_split_an_odd_quota_expert_first_and_depend_on_the_salt():
    eps = Episodes(np.zeros((60, 1)), np.repeat([0, 1], 30), np.tile(np.arange(30), 2), np.repeat([1, -1], 30),
                   ["expert", "random"])
    reward = np.concatenate([np.arange(30.0), -np.arange(30.0)])  # lowest likelihood: expert 0.., negative 30..
    rows = worst_rows(DemoScores(eps, reward), 3, "it1-c0")
    assert rows == sorted(rows) and len(rows) == 3
    experts, negatives = [r for r in rows if r < 30], [r for r in rows if r >= 30]
    assert len(experts) == 2 and len(negatives) == 1
    assert all(r < 15 for r in experts) and all(30 <= r < 45 for r in negatives)  # among the 5n = 15 worst
    assert worst_rows(DemoScores(eps, reward), 3, "it1-c0") == rows
    draws = {tuple(worst_rows(DemoScores(eps, reward), 3, f"it1-c{i}")) for i in range(8)}
    assert len(draws) > 1  # another candidate id, another sample
    only_experts = Episodes(eps.states[:30], eps.episode[:30], eps.step[:30], eps.label[:30], ["expert"])
    assert len(worst_rows(DemoScores(only_experts, reward[:30]), 4, "x")) == 2  # no negatives to fill their half


def test_worst_rows_draw_from_exactly_the_five_n_lowest_of_each_class():
    eps = Episodes(np.zeros((60, 1)), np.repeat([0, 1], 30), np.tile(np.arange(30), 2), np.repeat([1, -1], 30),
                   ["expert", "random"])
    reward = np.concatenate([np.arange(30.0), -np.arange(30.0)])
    seen = set()
    for i in range(60):
        seen |= set(worst_rows(DemoScores(eps, reward), 2, f"salt{i}"))
    assert seen == set(range(10)) | set(range(30, 40))  # 5n = 10 per class, all of them drawn at some point


def test_worst_rows_break_likelihood_ties_by_row_order():
    n_rows = 200
    eps = Episodes(np.zeros((n_rows, 1)), np.zeros(n_rows, dtype=int), np.arange(n_rows), np.ones(n_rows, dtype=int),
                   ["expert"])
    reward = np.tile([0.0, 5.0], n_rows // 2)  # the 100 even rows tie for the lowest likelihood
    seen = set()
    for i in range(200):
        seen |= set(worst_rows(DemoScores(eps, reward), 2, f"tie{i}"))
    assert seen == set(range(0, 20, 2))  # the first 5n = 10 of them, in row order
