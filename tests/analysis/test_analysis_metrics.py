import numpy as np
import pytest
from scipy import stats

from bird.analysis import (
    aggregate_iqm,
    aggregate_mean,
    aggregate_median,
    aggregate_optimality_gap,
    metric_interval,
    performance_profile,
    probability_of_improvement,
)

# Hand-worked: per-task means are 1.5 and 1.5; sorted pooled scores [1,1,1,1,2,2,2,2] -> IQM of [1,1,2,2] = 1.5.
X = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0], [2.0, 1.0]])  # (runs x tasks)


def test_mean_median_iqm_of_the_hand_worked_matrix_are_one_and_a_half():
    assert aggregate_mean(X) == aggregate_median(X) == aggregate_iqm(X) == 1.5


def test_iqm_drops_floor_of_a_quarter_when_not_divisible_by_four():
    assert aggregate_iqm(np.array([[0.0], [1.0], [2.0], [3.0], [100.0]])) == 2.0


def test_optimality_gap_counts_only_the_shortfall_below_gamma():
    # min(x, 1) = [0.5, 1, 1, 0.2] -> mean 0.675 -> gap 0.325
    assert aggregate_optimality_gap(np.array([[0.5], [1.5], [1.0], [0.2]])) == pytest.approx(0.325)


def test_probability_of_improvement_counts_ties_half():
    # x = 0, 1, 2 vs y = 1, 1, 1 -> wins 0 + 1.5 + 3 of 9 = 0.5; second task x always wins -> mean 0.75.
    x = np.array([[0.0, 5.0], [1.0, 5.0], [2.0, 5.0]])
    y = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    assert probability_of_improvement(x, y) == pytest.approx(0.75)


def test_performance_profile_uses_a_strict_inequality():
    s = np.array([[0.0], [0.5], [1.0]])
    np.testing.assert_allclose(performance_profile(s, [0.0, 0.5, 1.0]), [2 / 3, 1 / 3, 0.0])


def test_ragged_tables_average_over_tasks():
    x = {"a": [1.0, 0.0], "b": [1.0, 1.0, 1.0, 0.0]}
    assert aggregate_mean(x) == pytest.approx(0.625)
    np.testing.assert_allclose(performance_profile(x, [0.5]), [(0.5 + 0.75) / 2])
    y = {"a": [0.5], "b": [1.0]}
    # task a: 1 of 2 wins; task b: three ties and one loss = 1.5 of 4
    assert probability_of_improvement(x, y) == pytest.approx((0.5 + 0.375) / 2)


def test_probability_of_improvement_rejects_different_task_sets():
    with pytest.raises(ValueError, match="task sets differ"):
        probability_of_improvement({"a": [1.0]}, {"b": [1.0]})


# rliable 1.2.0's definitions on a dense (runs x tasks) array, written out (rliable itself conflicts with pandas 3).
def _rliable_poi(x, y):
    probs = []
    for t in range(x.shape[1]):
        if np.array_equal(x[:, t], y[:, t]):
            probs.append(0.5)
        else:
            u, _ = stats.mannwhitneyu(x[:, t], y[:, t], alternative="greater")
            probs.append(u / (x.shape[0] * y.shape[0]))
    return np.mean(probs)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_metrics_match_rliable_definitions_on_dense_arrays(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0, 1.3, size=(7, 5)), 1)  # rounded so ties occur
    y = np.round(rng.uniform(0, 1.3, size=(6, 5)), 1)
    taus = np.linspace(0, 1.3, 14)
    assert aggregate_mean(x) == pytest.approx(np.mean(np.mean(x, axis=0)), abs=1e-12)
    assert aggregate_median(x) == pytest.approx(np.median(np.mean(x, axis=0)), abs=1e-12)
    assert aggregate_iqm(x) == pytest.approx(stats.trim_mean(x, 0.25, axis=None), abs=1e-12)
    assert aggregate_optimality_gap(x) == pytest.approx(1 - np.mean(np.minimum(x, 1)), abs=1e-12)
    assert probability_of_improvement(x, y) == pytest.approx(_rliable_poi(x, y), abs=1e-12)
    np.testing.assert_allclose(performance_profile(x, taus), [np.mean(x > t) for t in taus], atol=1e-12)
    np.testing.assert_allclose(performance_profile(x, taus, average_score=True),
                               [np.mean(np.mean(x, axis=0) > t) for t in taus], atol=1e-12)


def test_metric_interval_brackets_the_estimate_and_is_reproducible():
    x = np.random.default_rng(3).uniform(size=(8, 3))
    a = metric_interval(x, aggregate_iqm, n_resamples=200, random_state=1)
    b = metric_interval(x, aggregate_iqm, n_resamples=200, random_state=1)
    assert a == b
    assert a.low <= a.estimate <= a.high and a.n_tasks == 3 and a.n_seeds == 24
