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
