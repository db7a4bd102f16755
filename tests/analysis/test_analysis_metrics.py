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


def test_score_tables_of_the_wrong_shape_are_rejected_by_name():
    with pytest.raises(ValueError, match=r"must be \(num_runs x num_tasks\), got shape \(2, 2, 2\)"):
        aggregate_mean(np.zeros((2, 2, 2)))
    for bad in ({}, {"a": []}, np.zeros((0, 2))):
        with pytest.raises(ValueError, match="^scores need at least one task and one run per task$"):
            aggregate_mean(bad)
    assert aggregate_mean(np.array([1.0, 2.0, 6.0])) == 3.0  # a 1-D array is one task's runs


def test_optimality_gap_takes_another_target():
    assert aggregate_optimality_gap(np.array([[0.2], [0.8], [0.4]]), gamma=0.5) == pytest.approx(0.5 - 1.1 / 3)


def test_probability_of_improvement_pairs_tasks_by_name_and_checks_kinds():
    x = {"a": [1.0, 2.0], "b": [0.0]}
    y = {"b": [1.0], "a": [1.5]}  # other order: still a with a, b with b
    assert probability_of_improvement(x, y) == pytest.approx((0.5 + 0.0) / 2)
    with pytest.raises(TypeError, match="^scores_x and scores_y must both be arrays or both be mappings$"):
        probability_of_improvement(x, np.array([[1.0, 1.0]]))
    with pytest.raises(ValueError, match="x has 2 tasks, y has 3"):
        probability_of_improvement(np.zeros((2, 2)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"only in x \['a'\], only in y \['c'\]"):
        probability_of_improvement({"a": [1.0], "b": [1.0]}, {"b": [1.0], "c": [1.0]})


def test_average_score_profile_on_a_ragged_table():
    x = {"a": [1.0, 0.0], "b": [1.0, 1.0, 1.0, 0.0]}  # task means 0.5 and 0.75
    np.testing.assert_allclose(performance_profile(x, [0.4, 0.5, 0.6, 0.75], average_score=True), [1.0, 0.5, 0.5, 0.0])


def test_metric_interval_reports_its_method_counts_and_a_degenerate_case():
    x = {"a": [0.0, 1.0, 2.0], "b": [5.0]}
    iv = metric_interval(x, aggregate_mean, n_resamples=100, random_state=0)
    assert iv.method == "percentile" and (iv.n_tasks, iv.n_seeds) == (2, 4)
    assert iv.estimate == aggregate_mean(x) == 3.0 and iv.low < iv.estimate < iv.high and not iv.degenerate
    flat = metric_interval({"a": [1.0, 1.0]}, aggregate_mean, method="BCa", n_resamples=50)
    assert (flat.low, flat.estimate, flat.high, flat.method) == (1.0, 1.0, 1.0, "BCa") and flat.degenerate


def test_scores_and_thresholds_read_as_floats():
    assert aggregate_mean({"a": ["0.5", "1.5"]}) == 1.0  # e.g. read from a CSV as text
    assert aggregate_mean(np.array([["1", "3"]])) == 2.0
    np.testing.assert_allclose(performance_profile({"a": [0.2, 0.8]}, ["0.5"]), [0.5])


def test_metric_interval_defaults_are_2000_resamples_and_seed_0():
    x = np.random.default_rng(7).uniform(size=(6, 2))
    default = metric_interval(x, aggregate_mean)
    assert default == metric_interval(x, aggregate_mean, n_resamples=2000, random_state=0)
    assert default != metric_interval(x, aggregate_mean, n_resamples=2000, random_state=5)
