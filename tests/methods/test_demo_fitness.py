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


def test_airl_is_class_balanced():
    # 1 positive, 3 negatives: each class mean counts once
    got = airl_loglik(np.array([0.0]), np.array([0.0, 0.0, 0.0]))
    assert got == pytest.approx(2 * math.log(0.5))


def test_worst_rows_are_the_lowest_likelihood_states_balanced_by_class():
    eps = Episodes(np.zeros((40, 2)), np.repeat([0, 1], 20), np.tile(np.arange(20), 2),
                   np.repeat([1, -1], 20), ["expert", "random"])
    reward = np.concatenate([np.arange(20.0), -np.arange(20.0)])  # expert 0 and negative 20 are the worst
    rows = worst_rows(DemoScores(eps, reward), 2, "c")  # one of the 10 worst of each class
    assert len(rows) == 2 and rows[0] < 10 and 20 <= rows[1] < 30
    many = worst_rows(DemoScores(eps, reward), 8, "c")
    assert len(many) == 8 and sum(r < 20 for r in many) == 4
