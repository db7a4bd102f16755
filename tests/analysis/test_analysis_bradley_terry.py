import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from bird.analysis import (
    DEFAULT_L2,
    DEFAULT_PRIOR_SD_ELO,
    bradley_terry,
    bradley_terry_intervals,
    l2_from_prior_sd_elo,
    strongly_connected,
    win_matrix,
)

ELO = 400 / math.log(10)


def test_three_wins_in_four_give_an_elo_gap_of_ln3():
    # pairs: 1>0, 1<1.5, 2>0, 2>1.5 -> A wins 3 of 4, so sigma(d) = 3/4 and d = ln 3 (the MLE: no prior to speak of)
    r = bradley_terry({"A": {"t": [1.0, 2.0]}, "B": {"t": [0.0, 1.5]}}, l2=1e-6)
    assert r["A"] - r["B"] == pytest.approx(ELO * math.log(3), abs=0.01)
    assert (r["A"] + r["B"]) / 2 == pytest.approx(1500)


def test_ties_count_half_so_all_ties_give_the_anchor():
    r = bradley_terry({"A": {"t": [0.5, 0.5]}, "B": {"t": [0.5]}, "C": {"t": [0.5, 0.5, 0.5]}})
    assert all(v == pytest.approx(1500) for v in r.values())
    assert r.strongly_connected


def test_win_matrix_counts_ties_half_over_ragged_seeds():
    names, w = win_matrix({"A": {"t": [1.0, 0.3]}, "B": {"t": [0.3, 0.0, 2.0]}})
    # A=1.0 beats 0.3, 0.0; loses to 2.0. A=0.3 ties 0.3, beats 0.0, loses to 2.0 -> 3.5 of 6.
    assert names == ["A", "B"]
    np.testing.assert_allclose(w, [[0, 3.5], [2.5, 0]])


def test_scores_equal_up_to_1e9_rounding_tie():
    _, w = win_matrix({"A": {"t": [7 / 10]}, "B": {"t": [0.1 * 7]}})
    np.testing.assert_allclose(w, [[0, 0.5], [0.5, 0]])


def test_method_missing_on_some_tasks_is_compared_on_shared_tasks_only():
    table = {"A": {"t1": [1.0, 2.0], "t2": [0.0]}, "B": {"t1": [0.0, 3.0, 1.5]}, "C": {"t2": [1.0, 2.0]}}
    _, w = win_matrix(table)
    n = w + w.T
    assert n[0, 1] == 2 * 3 and n[0, 2] == 1 * 2 and n[1, 2] == 0  # B and C share no task


def test_swapping_two_methods_swaps_their_ratings():
    t = {"A": {"x": [1, 2, 3], "y": [0, 5]}, "B": {"x": [2, 2.5, 0], "y": [1, 6]}, "C": {"x": [3, 0], "y": [2, 2]}}
    swapped = {"A": t["B"], "B": t["A"], "C": t["C"]}
    r, s = bradley_terry(t), bradley_terry(swapped)
    assert r["A"] == pytest.approx(s["B"], abs=1e-6) and r["B"] == pytest.approx(s["A"], abs=1e-6)


def test_increasing_transform_of_one_task_leaves_ratings_unchanged():
    t = {"A": {"x": [0.1, 0.7], "y": [0.3, 0.2]}, "B": {"x": [0.4, 0.9], "y": [0.5, 0.1]},
         "C": {"x": [0.2, 0.8], "y": [0.6, 0.25]}}
    u = {m: {"x": np.exp(3 * np.asarray(v["x"])), "y": v["y"]} for m, v in t.items()}
    r, s = bradley_terry(t), bradley_terry(u)
    assert all(r[m] == pytest.approx(s[m], abs=1e-6) for m in r)


def test_anchor_is_the_mean_rating():
    t = {"A": {"x": [1, 2]}, "B": {"x": [0, 1.5]}, "C": {"x": [1.2, 0.1]}}
    r = bradley_terry(t, anchor=1000.0)
    assert np.mean(list(r.values())) == pytest.approx(1000.0)


def _mm_mle(w: np.ndarray) -> np.ndarray:
    """Unpenalised BT MLE by Hunter's MM iteration (independent of the Newton/trust-region fit)."""
    n = w + w.T
    pi = np.ones(len(w))
    for _ in range(20000):
        denom = np.array([sum(n[i, j] / (pi[i] + pi[j]) for j in range(len(w)) if j != i) for i in range(len(w))])
        pi = w.sum(axis=1) / denom
        pi /= np.exp(np.log(pi).mean())
    return np.log(pi)


def test_ratings_match_an_independent_mm_fit_when_connected():
    rng = np.random.default_rng(0)
    table = {m: {t: rng.normal(mu, 1.0, size=4) for t in "abc"} for m, mu in zip("PQRS", [0, 0.3, 0.6, 1.0], strict=True)}
    names, w = win_matrix(table)
    assert strongly_connected(w)
    theta = _mm_mle(w)
    ref = 1500 + ELO * (theta - theta.mean())
    r = bradley_terry(table, l2=1e-6)  # the MLE
    assert [r[m] for m in names] == pytest.approx(list(ref), abs=0.01)
    shrunk = bradley_terry(table)  # the default prior pulls every rating towards the anchor
    assert all(abs(shrunk[m] - 1500) < abs(r[m] - 1500) for m in names)


def test_l2_penalty_is_lambda_sum_theta_squared_on_a_separated_pair():
    # A beats B in all 4 comparisons: minimise 4 log(1 + e^-d) + lam (d/2)^2 * 2 -> 4 sigma(-d) = lam d.
    lam = 1e-3
    with pytest.warns(UserWarning, match="not strongly connected"):
        r = bradley_terry({"A": {"t": [2.0, 3.0]}, "B": {"t": [0.0, 1.0]}}, l2=lam)
    d = optimize.brentq(lambda d: 4 / (1 + math.exp(d)) - lam * d, 0, 100)
    assert r["A"] - r["B"] == pytest.approx(ELO * d, abs=1e-3)
    assert not r.strongly_connected


def test_method_winning_everything_is_flagged_and_rated_far_above_without_a_prior_and_readably_with_it():
    table = {"A": {"t": [9.0, 9.5]}, "B": {"t": [0.0, 1.0]}, "C": {"t": [0.5, 1.5]}}
    with pytest.warns(UserWarning, match="not strongly connected"):
        r = bradley_terry(table, l2=1e-6)
    assert not r.strongly_connected and r["A"] - max(r["B"], r["C"]) > 1000
    with pytest.warns(UserWarning, match="not strongly connected"):
        r = bradley_terry(table)
    assert not r.strongly_connected and 0 < r["A"] - max(r["B"], r["C"]) < 3 * DEFAULT_PRIOR_SD_ELO


def test_one_sided_pair_stays_identifiable_when_connected_through_a_third_method():
    # A beats B always; C beats A sometimes; B beats C sometimes.
    table = {"A": {"t": [2.0, 3.0]}, "B": {"t": [0.0, 1.0]}, "C": {"t": [0.5, 2.5]}}
    _, w = win_matrix(table)
    assert w[1, 0] == 0 and strongly_connected(w)
    assert bradley_terry(table).strongly_connected


def test_dataframe_and_mapping_inputs_agree():
    table = {"A": {"x": [1.0, 2.0], "y": [0.5]}, "B": {"x": [0.0, 1.5], "y": [0.7]}}
    df = pd.DataFrame([{"method": m, "task": t, "seed": k, "score": s}
                       for m, ts in table.items() for t, v in ts.items() for k, s in enumerate(v)])
    assert bradley_terry(df) == pytest.approx(bradley_terry(table))


def test_intervals_bracket_ratings_and_are_reproducible():
    rng = np.random.default_rng(1)
    table = {m: {t: rng.normal(mu, 1.0, size=4) for t in "ab"} for m, mu in zip("PQR", [0, 0.5, 1.0], strict=True)}
    a = bradley_terry_intervals(table, n_resamples=60, random_state=3)
    b = bradley_terry_intervals(table, n_resamples=60, random_state=3)
    assert a.low == b.low and a.high == b.high
    assert all(a.low[m] <= a.ratings[m] <= a.high[m] for m in a.ratings)
    assert a.n_fits >= 60 and 0 <= a.n_not_connected <= a.n_fits


def test_interval_replicates_that_separate_a_method_are_counted():
    table = {"A": {"t": [1.0, 2.0, 3.0]}, "B": {"t": [0.5, 1.5, 2.5]}}
    fit = bradley_terry_intervals(table, n_resamples=100, method="percentile", random_state=0)
    assert fit.n_not_connected > 0


def test_prior_sd_elo_maps_to_l2_and_keeps_a_separated_gap_readable():
    sd = 400.0
    assert l2_from_prior_sd_elo(sd) == pytest.approx(1 / (2 * (sd / ELO) ** 2))
    table = {"A": {"t": [9.0, 9.5]}, "B": {"t": [0.0, 1.0]}}
    with pytest.warns(UserWarning):
        r = bradley_terry(table, l2=l2_from_prior_sd_elo(sd))
    assert 0 < r["A"] - r["B"] < 1000


def test_bad_tables_and_settings_are_rejected_by_name():
    with pytest.raises(ValueError, match=r"DataFrame lacks columns \['score'\]; has \['method', 'task'\]"):
        bradley_terry(pd.DataFrame({"method": ["A"], "task": ["t"]}))
    with pytest.raises(ValueError, match=r"method 'A' task 't' has non-finite scores"):
        bradley_terry({"A": {"t": [1.0, float("nan")]}, "B": {"t": [0.0]}})
    with pytest.raises(ValueError, match="^table is empty: no methods$"):
        bradley_terry({})
    with pytest.raises(ValueError, match=r"l2=-1 must be >= 0"):
        bradley_terry({"A": {"t": [1.0]}, "B": {"t": [0.0]}}, l2=-1)
    for sd in (0.0, -5.0):
        with pytest.raises(ValueError, match=f"sd_elo={sd!r} must be > 0"):
            l2_from_prior_sd_elo(sd)


def test_a_dataframe_without_seeds_orders_by_method_and_task():
    df = pd.DataFrame({"method": ["B", "A", "A", "B"], "task": ["t", "t", "t", "t"], "score": [0.0, 1.0, 2.0, 1.5]})
    methods, w = win_matrix(df)
    assert methods == ["A", "B"] and w.tolist() == [[0.0, 3.0], [1.0, 0.0]]


def test_one_method_sits_at_the_anchor():
    r = bradley_terry({"solo": {"t": [0.3, 0.9]}}, anchor=1000.0)
    assert r == {"solo": 1000.0} and r.strongly_connected


def test_strong_connection_needs_paths_both_ways():
    assert strongly_connected(np.zeros((1, 1)))
    chain = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert not strongly_connected(chain) and not strongly_connected(chain.T)
    cycle = chain.copy()
    cycle[2, 0] = 1
    assert strongly_connected(cycle) and strongly_connected(cycle.T)
    reaches_all_but_not_back = np.array([[0, 1, 1], [0, 0, 1], [0, 1, 0]])
    assert not strongly_connected(reaches_all_but_not_back)


def test_the_disconnection_warning_names_the_penalty_and_the_intervals_say_so_too():
    table = {"A": {"t": [9.0, 9.5]}, "B": {"t": [0.0, 1.0]}}
    with pytest.warns(UserWarning, match=r"^the win graph is not strongly connected: some methods never lose \(or never "
                                         r"win\) against the rest; their ratings are set by l2=0.01, not by the data$"):
        bradley_terry(table, l2=0.01)
    with pytest.warns(UserWarning, match="^the win graph is not strongly connected; see BTIntervals.n_not_connected$"):
        fit = bradley_terry_intervals(table, l2=0.01, n_resamples=20, method="percentile")
    assert fit.method == "percentile" and fit.n_resamples == 20 and fit.n_fits == 21  # 20 replicates + the estimate
    assert fit.n_not_connected == fit.n_fits


def test_intervals_respect_the_anchor_and_confidence_level():
    rng = np.random.default_rng(4)
    table = {m: {t: rng.normal(mu, 1.0, size=5) for t in "ab"} for m, mu in zip("PQ", [0, 0.7], strict=True)}
    wide = bradley_terry_intervals(table, anchor=1000.0, n_resamples=80, confidence_level=0.95, random_state=1)
    narrow = bradley_terry_intervals(table, anchor=1000.0, n_resamples=80, confidence_level=0.5, random_state=1)
    assert sum(wide.ratings.values()) / 2 == pytest.approx(1000.0)
    for m in "PQ":
        assert wide.high[m] - wide.low[m] > narrow.high[m] - narrow.low[m] > 0
        assert 500 < wide.low[m] < 1500


def test_a_task_only_one_method_ran_does_not_stop_the_count():
    methods, w = win_matrix({"A": {"a_only": [1.0], "z": [1.0, 2.0]}, "B": {"z": [0.0]}})
    assert methods == ["A", "B"] and w.tolist() == [[0.0, 2.0], [0.0, 0.0]]


def test_zero_penalty_and_small_priors_are_allowed():
    table = {"A": {"t": [1.0, 0.0]}, "B": {"t": [0.5, 0.2]}}
    assert bradley_terry(table, l2=0.0).strongly_connected
    assert l2_from_prior_sd_elo(0.5) == pytest.approx(1 / (2 * (0.5 / ELO) ** 2))


def test_text_scores_read_as_floats_and_seed_order_is_kept_from_a_shuffled_dataframe():
    table = {"A": {"t": [0.3, 0.9, 0.1, 0.6]}, "B": {"t": [0.5, 0.2, 0.7, 0.4]}}
    assert bradley_terry({m: {t: [str(x) for x in v] for t, v in ts.items()} for m, ts in table.items()}) \
        == pytest.approx(bradley_terry(table))
    rows = [{"method": m, "task": t, "seed": k, "score": x} for m, ts in table.items() for t, v in ts.items()
            for k, x in enumerate(v)]
    shuffled = pd.DataFrame(rows).sample(frac=1.0, random_state=3)
    a = bradley_terry_intervals(shuffled, n_resamples=40, random_state=2)
    b = bradley_terry_intervals(table, n_resamples=40, random_state=2)
    assert a.low == b.low and a.high == b.high


def test_interval_defaults_are_the_prior_anchor_1500_2000_resamples_seed_0():
    rng = np.random.default_rng(8)
    table = {m: {"t": rng.normal(mu, 1.0, size=4)} for m, mu in zip("PQ", [0, 0.5], strict=True)}
    default = bradley_terry_intervals(table)
    explicit = bradley_terry_intervals(table, l2=l2_from_prior_sd_elo(300.0), anchor=1500.0, confidence_level=0.95,
                                       n_resamples=2000, method="BCa", random_state=0)
    assert DEFAULT_PRIOR_SD_ELO == 300.0 and l2_from_prior_sd_elo(300.0) == DEFAULT_L2
    assert default == explicit and default.l2 == DEFAULT_L2
    assert default != bradley_terry_intervals(table, n_resamples=2000, random_state=1)


# -- intervals a reader can trust: resamples that are not strongly connected ---------------------------------------
def _separated_gap(wins: int, l2: float) -> float:
    """Elo gap of a pair where one side won all `wins` comparisons: minimise wins log(1 + e^-d) + l2 (d/2)^2 * 2."""
    return ELO * optimize.brentq(lambda d: wins / (1 + math.exp(d)) - l2 * d, 0, 100)


def test_a_pair_that_half_the_resamples_separate_has_the_known_interval_and_is_not_identifiable():
    # A's two seeds straddle B's: resampling A gives {0,0} (B wins all 4), {2,2} (A wins all 4) or one of each
    # (2-2: both at 1500), with probabilities 1/4, 1/4, 1/2; B's resamples are all [1, 1]. So half the resamples are
    # not strongly connected, and the 2.5% and 97.5% percentiles are the separated fits: 1500 -/+ half the gap.
    table = {"A": {"t": [0.0, 2.0]}, "B": {"t": [1.0, 1.0]}}
    fit = bradley_terry_intervals(table, n_resamples=2000, method="percentile", random_state=0)
    half = _separated_gap(4, DEFAULT_L2) / 2
    assert fit.ratings == pytest.approx({"A": 1500.0, "B": 1500.0}) and fit.ratings.strongly_connected
    assert (fit.low["A"], fit.high["A"]) == pytest.approx((1500 - half, 1500 + half), abs=1e-6)
    assert fit.n_fits == 2001 and fit.not_connected_share == pytest.approx(0.5, abs=0.03)
    assert not fit.identifiable
    assert fit.describe("A") == f"1500 (not identifiable: {fit.not_connected_share:.1%} of resamples not " \
                                "connected)"


def test_a_method_that_never_loses_has_no_identifiable_interval_and_a_rating_set_by_the_prior():
    table = {"A": {"t": [9.0, 9.5]}, "B": {"t": [0.0, 1.0]}}  # A beats B in every seed pair of every resample
    with pytest.warns(UserWarning, match="not strongly connected"):
        fit = bradley_terry_intervals(table, n_resamples=200, method="percentile", random_state=0)
    gap = _separated_gap(4, DEFAULT_L2)
    assert fit.ratings["A"] - fit.ratings["B"] == pytest.approx(gap, abs=1e-3) and gap < 2 * DEFAULT_PRIOR_SD_ELO
    assert fit.n_not_connected == fit.n_fits and not fit.identifiable
    assert fit.describe("A").startswith(f"{1500 + gap / 2:.0f} (rating set by the prior) (not identifiable: "
                                        "100.0% of resamples")


def test_a_pair_that_no_resample_separates_keeps_its_interval_with_no_share_shown():
    # each method wins one task outright: every resample has A 4-0 on t1 and B 4-0 on t2, so W = [[4, 4], [4, 4]]
    table = {"A": {"t1": [2.0, 3.0], "t2": [0.0, 1.0]}, "B": {"t1": [0.0, 1.0], "t2": [2.0, 3.0]}}
    fit = bradley_terry_intervals(table, n_resamples=100, method="percentile", random_state=0)
    assert fit.n_not_connected == 0 and fit.identifiable
    assert (fit.low["A"], fit.high["A"]) == pytest.approx((1500.0, 1500.0))
    assert fit.describe("A") == "1500 [1500, 1500]"


@pytest.mark.parametrize("share, identifiable", [(0.025, True), (0.026, False)])
def test_the_not_identifiable_threshold_is_one_tail_of_the_interval(share, identifiable):
    from bird.analysis import BTIntervals, Ratings

    fit = BTIntervals(Ratings({"A": 1500.0}), {"A": 1400.0}, {"A": 1600.0}, "BCa", 1000, round(share * 1000), 1000)
    assert fit.identifiable is identifiable
    assert fit.describe("A") == ("1500 [1400, 1600] (2.5% of resamples not connected)" if identifiable else
                                 "1500 (not identifiable: 2.6% of resamples not connected)")
