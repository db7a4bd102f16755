import warnings

import numpy as np
import pytest
from scipy import stats

from bird.analysis import bca_interval, interval, stratified_bootstrap
from bird.analysis.bootstrap import few_seeds_label


def test_bca_on_one_array_equals_scipy_bca_of_the_mean():
    x = np.random.default_rng(1).normal(size=12)
    ref = stats.bootstrap((x,), np.mean, method="BCa", n_resamples=2000, rng=3).confidence_interval
    low, high = bca_interval(x, n_resamples=2000, random_state=3)
    assert low == pytest.approx(ref.low, abs=1e-12)
    assert high == pytest.approx(ref.high, abs=1e-12)


def test_bca_on_tasks_equals_scipy_recipe_with_one_sample_per_task():
    rng = np.random.default_rng(2)
    tasks = {"a": rng.normal(size=5), "b": rng.normal(2, size=8), "c": rng.normal(-1, size=3)}

    def mean_of_task_means(*ts, axis=-1):
        return np.mean([np.mean(t, axis=axis) for t in ts], axis=0)

    ref = stats.bootstrap(tuple(tasks.values()), mean_of_task_means, method="BCa", n_resamples=1000,
                          rng=0).confidence_interval
    assert bca_interval(tasks, n_resamples=1000) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_task_mean_weighs_tasks_equally_and_pooled_mean_weighs_runs_when_seeds_are_ragged():
    scores = {"a": [0.0, 1.0], "b": [1.0, 1.0, 1.0, 0.0]}
    assert interval(scores, n_resamples=200).estimate == pytest.approx((0.5 + 0.75) / 2)
    assert interval(scores, statistic="pooled_mean", n_resamples=200).estimate == pytest.approx(4 / 6)


def test_task_mean_equals_pooled_mean_on_rectangular_data():
    scores = {"a": [0.1, 0.4, 0.3], "b": [0.9, 0.2, 0.5]}
    assert interval(scores, n_resamples=200).estimate == pytest.approx(
        interval(scores, statistic="pooled_mean", n_resamples=200).estimate)


def test_single_seed_task_is_held_fixed_and_shifts_the_interval_affinely():
    b = np.array([0.1, 0.5, 0.3, 0.9, 0.4])
    with pytest.warns(UserWarning, match="single seed"):
        both = interval({"a": [0.2], "b": b}, n_resamples=500)
    alone = interval(b, n_resamples=500)
    assert both.low == pytest.approx((0.2 + alone.low) / 2, abs=1e-12)
    assert both.high == pytest.approx((0.2 + alone.high) / 2, abs=1e-12)


def test_constant_scores_give_degenerate_point_interval_with_warning():
    with pytest.warns(UserWarning, match="degenerate"):
        iv = interval({"a": [1.0, 1.0, 1.0], "b": [1.0, 1.0]}, n_resamples=200)
    assert (iv.low, iv.high, iv.degenerate) == (1.0, 1.0, True)


def test_one_seed_per_task_gives_degenerate_interval():
    with pytest.warns(UserWarning, match="single seed"):
        iv = interval({"a": [0.3], "b": [0.5]}, n_resamples=200)
    assert (iv.estimate, iv.low, iv.high, iv.degenerate) == (pytest.approx(0.4), 0.4, 0.4, True)


def test_percentile_interval_contains_the_estimate():
    x = np.random.default_rng(0).uniform(size=20)
    iv = interval(x, method="percentile", n_resamples=500)
    assert iv.low < iv.estimate < iv.high
    assert iv.method == "percentile"


def test_permuting_seeds_within_a_task_changes_nothing_beyond_monte_carlo_noise():
    rng = np.random.default_rng(4)
    tasks = {"a": rng.normal(size=10), "b": rng.normal(size=10)}
    perm = {"a": tasks["a"][::-1], "b": rng.permutation(tasks["b"])}
    lo1, hi1 = bca_interval(tasks, n_resamples=4000)
    lo2, hi2 = bca_interval(perm, n_resamples=4000)
    assert lo1 == pytest.approx(lo2, abs=0.05) and hi1 == pytest.approx(hi2, abs=0.05)


@pytest.mark.parametrize("bad, match", [({}, "empty"), ({"a": []}, "no scores"),
                                        ({"a": [1.0, np.nan]}, "non-finite")])
def test_invalid_scores_raise_naming_the_problem(bad, match):
    with pytest.raises(ValueError, match=match):
        bca_interval(bad)


def test_unknown_method_or_statistic_is_rejected():
    with pytest.raises(ValueError, match="method='bca'"):
        interval([1.0, 2.0], method="bca")
    with pytest.raises(ValueError, match="statistic='median'"):
        interval([1.0, 2.0], statistic="median")


def test_stratified_bootstrap_vector_statistic_and_reproducible_seed():
    samples = [np.array([0.0, 1.0, 2.0]), np.array([5.0, 6.0])]

    def stat(s):
        return np.array([s[0].mean(), s[1].mean()])

    low1, high1, deg = stratified_bootstrap(samples, stat, "percentile", n_resamples=300, random_state=5)
    low2, high2, _ = stratified_bootstrap(samples, stat, "percentile", n_resamples=300, random_state=5)
    assert low1.shape == (2,) and not deg
    np.testing.assert_array_equal(low1, low2)
    np.testing.assert_array_equal(high1, high2)
    assert np.all(low1 <= [1.0, 5.5]) and np.all(high1 >= [1.0, 5.5])


def _diff(s):
    return s[0].mean() - s[1].mean()


def test_stratified_bootstrap_equals_scipy_with_each_sample_resampled_on_its_own():
    a, b = np.array([0.1, 0.9, 0.4, 0.7, 0.3]), np.array([0.2, 0.25, 0.6, 0.1])
    low, high, degenerate = stratified_bootstrap([list(a), list(b)], _diff, n_resamples=400, random_state=3)
    ref = stats.bootstrap((a, b), lambda x, y: x.mean() - y.mean(), vectorized=False, paired=False, method="BCa",
                          n_resamples=400, confidence_level=0.95, rng=3)
    assert (float(low), float(high)) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)
    assert low.dtype == np.float64 and not degenerate
    narrow = stratified_bootstrap([a, b], _diff, "percentile", confidence_level=0.5, n_resamples=400, random_state=3)
    ref50 = stats.bootstrap((a, b), lambda x, y: x.mean() - y.mean(), vectorized=False, paired=False,
                            method="percentile", n_resamples=400, confidence_level=0.5, rng=3)
    assert (float(narrow[0]), float(narrow[1])) == pytest.approx(tuple(ref50.confidence_interval), abs=1e-12)


def test_stratified_bootstrap_defaults_are_bca_10000_resamples_and_seed_0():
    rng = np.random.default_rng(11)
    a, b = rng.uniform(size=9), rng.uniform(size=7)
    default = stratified_bootstrap([a, b], _diff)
    explicit = stratified_bootstrap([a, b], _diff, "BCa", 0.95, 10_000, 0)
    np.testing.assert_array_equal(default[:2], explicit[:2])
    assert not np.array_equal(default[:2], stratified_bootstrap([a, b], _diff, "BCa", 0.95, 10_000, 1)[:2])


def test_a_single_observation_is_held_fixed_with_a_warning():
    a = np.array([0.1, 0.9, 0.4, 0.7])
    with pytest.warns(UserWarning) as record:
        low, high, _ = stratified_bootstrap([a, np.array([10.0])], lambda s: s[0].mean() + s[1][0],
                                            "percentile", n_resamples=300, random_state=0)
    assert [str(w.message) for w in record] == [
        "1 of 2 samples have a single observation; they are held fixed in the bootstrap"]
    shifted = stratified_bootstrap([a], lambda s: s[0].mean(), "percentile", n_resamples=300, random_state=0)
    assert (float(low), float(high)) == pytest.approx((float(shifted[0]) + 10.0, float(shifted[1]) + 10.0))


def test_nothing_to_resample_returns_the_point_as_a_degenerate_interval():
    low, high, degenerate = stratified_bootstrap([np.array([2]), np.array([3])], lambda s: int(s[0][0] + s[1][0]))
    assert (low, high, degenerate) == (5.0, 5.0, True) and low.dtype == np.float64


def test_a_component_that_cannot_vary_is_pinned_to_its_point_while_the_others_get_bounds():
    samples = [np.array([1.0, 1.0, 1.0]), np.array([0.0, 2.0, 5.0])]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's degenerate-data and NaN warnings stay inside
        low, high, degenerate = stratified_bootstrap(samples, lambda s: np.array([s[0].mean(), s[1].mean()]),
                                                     n_resamples=200, random_state=0)
    assert (low[0], high[0]) == (1.0, 1.0) and low[1] < 7 / 3 < high[1] and not degenerate
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat = stratified_bootstrap([np.array([1.0, 1.0])], lambda s: s[0].mean(), n_resamples=50)
    assert (float(flat[0]), float(flat[1]), flat[2]) == (1.0, 1.0, True)


@pytest.mark.parametrize("level", [0.0, 1.0, 1.5, -0.1])
def test_confidence_level_must_lie_strictly_between_0_and_1(level):
    with pytest.raises(ValueError, match=rf"^confidence_level={level!r} must lie in \(0, 1\)$"):
        stratified_bootstrap([np.array([1.0, 2.0])], lambda s: s[0].mean(), confidence_level=level)


def test_bad_methods_and_empty_or_non_finite_scores_are_named():
    with pytest.raises(ValueError, match=r"^method='bca'; expected one of \('BCa', 'percentile'\)$"):
        stratified_bootstrap([np.array([1.0, 2.0])], lambda s: s[0].mean(), method="bca")
    with pytest.raises(ValueError, match="^scores is empty: need at least one task$"):
        interval({})
    with pytest.raises(ValueError, match=r"^task '_' has non-finite scores"):
        interval([1.0, float("nan")])
    assert interval(["0.5", "1.5"], n_resamples=50).estimate == 1.0  # text scores read as floats


def test_interval_records_its_method_task_and_seed_counts():
    x = {"a": [0.1, 0.5, 0.9], "b": [0.2, 0.4]}
    iv = interval(x, n_resamples=200)
    assert (iv.method, iv.n_tasks, iv.n_seeds, iv.degenerate) == ("BCa", 2, 5, False)
    assert interval(x, "percentile", n_resamples=200).method == "percentile"
    assert interval(x) == interval(x, "BCa", "task_mean", 0.95, 10_000, 0)
    assert interval(x) != interval(x, random_state=1)
    narrow = interval(x, "percentile", confidence_level=0.5, n_resamples=500)
    wide = interval(x, "percentile", confidence_level=0.95, n_resamples=500)
    assert wide.low < narrow.low < narrow.high < wide.high


def test_a_task_with_two_seeds_is_resampled():
    iv = interval({"a": [0.0, 1.0]}, "percentile", n_resamples=200)
    assert iv.low < iv.high and not iv.degenerate


def test_degenerate_cases_say_so_exactly():
    with pytest.warns(UserWarning) as record:
        iv = interval({"a": [2.0], "b": [4.0]}, "percentile")
    assert [str(w.message) for w in record] == [
        "every task has a single seed: nothing to resample, interval is [estimate, estimate]"]
    assert iv == type(iv)(3.0, 3.0, 3.0, "percentile", 2, 2, True)
    with pytest.warns(UserWarning) as record:
        iv = interval({"a": [1.0, 1.0, 1.0]}, "BCa", n_resamples=100)
    assert [str(w.message) for w in record] == [
        "degenerate bootstrap (all replicates equal to 1); reporting [estimate, estimate]"]
    assert iv == type(iv)(1.0, 1.0, 1.0, "BCa", 1, 3, True)
    with pytest.warns(UserWarning) as record:
        interval({"a": [0.0, 1.0, 2.0], "b": [5.0]}, n_resamples=100)
    assert [str(w.message) for w in record] == ["1 task(s) have a single seed and are held fixed in the bootstrap"]


@pytest.mark.parametrize("statistic", ["task_mean", "pooled_mean"])
def test_a_single_seed_task_shifts_both_statistics_by_its_fixed_share(statistic):
    a = np.array([0.0, 1.0, 2.0, 4.0])
    with pytest.warns(UserWarning, match="held fixed"):
        iv = interval({"a": a, "b": [10.0]}, "percentile", statistic, n_resamples=300, random_state=0)
    if statistic == "task_mean":
        est, f = (a.mean() + 10.0) / 2, (lambda x, axis=-1: (x.mean(axis=axis) + 10.0) / 2)
    else:
        est, f = (a.sum() + 10.0) / 5, (lambda x, axis=-1: (x.sum(axis=axis) + 10.0) / 5)
    ref = stats.bootstrap((a,), f, vectorized=True, method="percentile", n_resamples=300, rng=0)
    assert iv.estimate == pytest.approx(est)
    assert (iv.low, iv.high) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)
    assert (iv.n_tasks, iv.n_seeds, iv.degenerate) == (2, 5, False)


def test_the_percentile_method_gives_scipys_percentile_interval_not_bca():
    x = {"a": np.random.default_rng(4).exponential(size=15)}
    ref = stats.bootstrap((x["a"],), np.mean, method="percentile", n_resamples=500, rng=0).confidence_interval
    iv = interval(x, "percentile", n_resamples=500)
    assert (iv.low, iv.high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert (iv.low, iv.high) != pytest.approx(bca_interval(x, n_resamples=500), abs=1e-6)  # skewed: BCa differs


def test_bca_interval_defaults_to_ten_thousand_resamples_and_seed_0():
    rng = np.random.default_rng(5)
    x = {"a": rng.normal(size=6), "b": rng.exponential(size=5)}
    iv = interval(x, "BCa", n_resamples=10_000, random_state=0)
    assert bca_interval(x) == (iv.low, iv.high)
    assert bca_interval(x) != bca_interval(x, n_resamples=10_001)


def test_a_non_finite_score_error_shows_the_first_five_non_finite_values():
    bad = [1.0, float("nan"), 2.0, float("inf"), -float("inf"), float("nan"), 3.0, float("nan"), float("inf")]
    with pytest.raises(ValueError) as err:
        interval({"t": bad})
    assert str(err.value) == "task 't' has non-finite scores: [ nan  inf -inf  nan  nan]"


def test_text_scores_are_read_as_floats_in_a_mapping_and_in_stratified_samples():
    assert interval({"a": ["0.5", "1.5"], "b": ["3", "3.0"]}, n_resamples=50).estimate == 2.0
    low, high, _ = stratified_bootstrap([["1", "2", "4"]], lambda s: s[0].mean(), "percentile", n_resamples=50)
    assert 1.0 <= low <= high <= 4.0


@pytest.mark.parametrize("statistic", ["task_mean", "pooled_mean"])
def test_tasks_with_two_seeds_are_resampled_and_none_is_held_fixed(statistic):
    scores = {"a": [1.0, 3.0], "b": [5.0, 9.0]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a task held fixed would warn
        iv = interval(scores, "percentile", statistic, n_resamples=300, random_state=0)
    ref = stats.bootstrap((np.array([1.0, 3.0]), np.array([5.0, 9.0])), lambda a, b, axis=-1: (
        a.mean(axis=axis) + b.mean(axis=axis)) / 2, vectorized=True, method="percentile", n_resamples=300, rng=0)
    assert (iv.low, iv.high) == pytest.approx(tuple(ref.confidence_interval), abs=1e-12)
    assert iv.low < iv.estimate == 4.5 < iv.high and not iv.degenerate


def test_stratified_bootstrap_resamples_samples_of_two():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sample held fixed would warn
        low, high, degenerate = stratified_bootstrap([np.array([1.0, 3.0]), np.array([5.0, 7.0])],
                                                     lambda s: s[0].mean() + s[1].mean(), "percentile",
                                                     n_resamples=200, random_state=0)
    assert (float(low), float(high), degenerate) == (6.0, 10.0, False)


def test_a_bound_that_overflows_gives_the_point_not_an_infinite_bound():
    # a resample holding the huge score twice overflows its mean: the upper bound is infinite, the lower finite
    with pytest.warns(UserWarning, match="^degenerate bootstrap"):
        iv = interval([1e308] + [0.0] * 7, "percentile", n_resamples=200)
    assert (iv.low, iv.high, iv.degenerate) == (1.25e307, 1.25e307, True)
    samples = [np.array([0.0, 0.0, 0.0, 1.0]), np.array([1.0, 2.0, 3.0])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 1 / 0 in the statistic
        low, high, degenerate = stratified_bootstrap(samples, lambda s: np.array([1 / s[0].mean(), s[1].mean()]),
                                                     "percentile", n_resamples=200, random_state=0)
    assert (low[0], high[0]) == (4.0, 4.0) and low[1] < 2.0 < high[1] and not degenerate


def test_fewer_than_five_seeds_are_labelled_with_their_count():
    assert [few_seeds_label(n) for n in (1, 2, 4, 5, 6)] == [
        " (1 seed < 5: about the seeds' range)", " (2 seeds < 5: about the seeds' range)",
        " (4 seeds < 5: about the seeds' range)", "", ""]


def test_a_warning_from_the_callers_statistic_reaches_the_caller_from_every_resample():
    calls = []

    def noisy_mean(s):
        calls.append(1)
        warnings.warn("the statistic says so", UserWarning, stacklevel=1)
        return s[0].mean()

    with pytest.warns(UserWarning, match="^the statistic says so$") as record:
        stratified_bootstrap([np.array([0.0, 1.0, 3.0])], noisy_mean, "percentile", n_resamples=20)
    assert len(calls) > 20 and len(record) == len(calls)  # the point estimate's and each resample's
