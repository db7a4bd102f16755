import math
import warnings

import numpy as np
import pytest

from bird.analysis import (
    ZeroVarianceWarning,
    canonicalize_samples,
    canonicalize_tabular,
    epic_distance_samples,
    epic_distance_tabular,
    pearson_distance,
)

GAMMA = 0.9
NS, NA = 5, 3


@pytest.fixture()
def setup():
    rng = np.random.default_rng(0)
    r = rng.normal(size=(NS, NA, NS))
    phi = rng.normal(size=NS)
    p_s = rng.dirichlet(np.ones(NS))
    p_a = rng.dirichlet(np.ones(NA))
    cov = rng.uniform(size=(NS, NA, NS))
    shaping = GAMMA * phi[None, None, :] - phi[:, None, None]
    return r, shaping, p_s, p_a, cov


def _epic(a, b, p_s, p_a, cov):
    return epic_distance_tabular(a, b, GAMMA, state_dist=p_s, action_dist=p_a, coverage=cov)


def test_potential_shaping_leaves_distance_zero(setup):
    r, shaping, p_s, p_a, cov = setup
    assert _epic(r, r + shaping, p_s, p_a, cov) == pytest.approx(0, abs=1e-6)


def test_positive_rescaling_shaping_and_constant_leave_distance_zero(setup):
    r, shaping, p_s, p_a, cov = setup
    assert _epic(r, 3 * r + shaping - 7.0, p_s, p_a, cov) == pytest.approx(0, abs=1e-6)


def test_shaping_with_the_wrong_discount_is_not_ignored(setup):
    r, _, p_s, p_a, cov = setup
    phi = np.arange(NS, dtype=float) ** 2
    wrong = 0.5 * phi[None, None, :] - phi[:, None, None]
    assert _epic(r, r + wrong, p_s, p_a, cov) > 0.01


def test_negated_reward_gives_one(setup):
    r, _, p_s, p_a, cov = setup
    assert _epic(r, -r, p_s, p_a, cov) == pytest.approx(1.0, abs=1e-9)


def test_symmetric_bounded_and_triangle_inequality():
    rng = np.random.default_rng(1)
    rs = [rng.normal(size=(NS, NA, NS)) for _ in range(4)]
    for a in rs:
        for b in rs:
            d = epic_distance_tabular(a, b, GAMMA)
            assert 0 <= d <= 1
            assert d == pytest.approx(epic_distance_tabular(b, a, GAMMA), abs=1e-12)
            for c in rs:
                assert d <= epic_distance_tabular(a, c, GAMMA) + epic_distance_tabular(c, b, GAMMA) + 1e-9


@pytest.mark.parametrize("which", ["pure_shaping", "constant"])
def test_zero_variance_canonical_reward_gives_nan(setup, which):
    r, shaping, *_ = setup
    other = np.broadcast_to(shaping, r.shape) if which == "pure_shaping" else np.full_like(r, 4.2)
    with pytest.warns(ZeroVarianceWarning):
        assert math.isnan(epic_distance_tabular(r, other, GAMMA))


def test_uncorrelated_canonical_rewards_give_one_over_sqrt2():
    # One state: C(R) = R - mean_a R, so these canonical rewards are [1,-1,1,-1] and [1,1,-1,-1] (rho = 0).
    a = np.array([1.0, -1.0, 1.0, -1.0]).reshape(1, 4, 1) + 3
    b = np.array([1.0, 1.0, -1.0, -1.0]).reshape(1, 4, 1)
    assert epic_distance_tabular(a, b, 0.99) == pytest.approx(1 / math.sqrt(2))


def test_canonicalisation_matches_a_loop_over_the_definition(setup):
    r, _, p_s, p_a, _ = setup
    m = np.array([sum(p_a[a] * p_s[z] * r[x, a, z] for a in range(NA) for z in range(NS)) for x in range(NS)])
    mu = sum(p_s[x] * m[x] for x in range(NS))
    want = np.array([[[r[s, a, z] + GAMMA * m[z] - m[s] - GAMMA * mu for z in range(NS)] for a in range(NA)]
                     for s in range(NS)])
    np.testing.assert_allclose(canonicalize_tabular(r, GAMMA, p_s, p_a), want, atol=1e-12)


def test_zero_coverage_transitions_do_not_enter_the_correlation(setup):
    r, _, p_s, p_a, _ = setup
    other = np.random.default_rng(9).normal(size=r.shape)
    cov = np.ones_like(r)
    cov[0, 0, 0] = 0.0
    ca, cb = canonicalize_tabular(r, GAMMA, p_s, p_a), canonicalize_tabular(other, GAMMA, p_s, p_a)
    keep = cov.ravel() > 0
    rho = np.corrcoef(ca.ravel()[keep], cb.ravel()[keep])[0, 1]
    assert _epic(r, other, p_s, p_a, cov) == pytest.approx(math.sqrt((1 - rho) / 2), abs=1e-12)


def test_invalid_inputs_name_the_bad_value():
    r = np.zeros((2, 2, 2))
    with pytest.raises(ValueError, match="discount=1.5"):
        epic_distance_tabular(r, r, 1.5)
    with pytest.raises(ValueError, match="state_dist"):
        epic_distance_tabular(r, r, 0.9, state_dist=[0.2, 0.2])
    with pytest.raises(ValueError, match="shape"):
        epic_distance_tabular(r, np.zeros((2, 2, 3)), 0.9)


# --- sample-based estimator ---

def _tabular_as_function(table):
    def reward(obs, acts, next_obs):
        return table[obs.astype(int), acts.astype(int), next_obs.astype(int)]
    return reward


def test_samples_on_a_full_mesh_equal_the_uniform_tabular_distance(setup):
    r, _, *_ = setup
    r2 = np.random.default_rng(5).normal(size=r.shape)
    s, a, z = (g.ravel() for g in np.meshgrid(np.arange(NS), np.arange(NA), np.arange(NS), indexing="ij"))
    u, x = (g.ravel() for g in np.meshgrid(np.arange(NA), np.arange(NS), indexing="ij"))
    d_s = epic_distance_samples(_tabular_as_function(r), _tabular_as_function(r2), s, a, z, x, u, GAMMA)
    assert d_s == pytest.approx(epic_distance_tabular(r, r2, GAMMA), abs=1e-12)


def _continuous_batch(n=200, n_m=64, seed=0):
    rng = np.random.default_rng(seed)
    obs = {"pos": rng.normal(size=(n, 2)), "vel": rng.normal(size=(n, 1))}
    nxt = {"pos": obs["pos"] + 0.1 * rng.normal(size=(n, 2)), "vel": rng.normal(size=(n, 1))}
    acts = rng.uniform(-1, 1, size=(n, 2))
    mean_obs = {"pos": rng.normal(size=(n_m, 2)), "vel": rng.normal(size=(n_m, 1))}
    mean_acts = rng.uniform(-1, 1, size=(n_m, 2))
    return obs, acts, nxt, mean_obs, mean_acts


def _progress(obs, acts, next_obs):
    return next_obs["pos"][:, 0] - obs["pos"][:, 0] - 0.1 * np.sum(acts**2, axis=1) + next_obs["vel"][:, 0] ** 2


def _phi(o):
    return np.sin(o["pos"][:, 1]) + o["vel"][:, 0]


def test_samples_shaping_scaling_and_constant_are_ignored_with_common_samples():
    batch = _continuous_batch()

    def shaped(o, a, n):
        return 2.5 * _progress(o, a, n) + GAMMA * _phi(n) - _phi(o) + 3.0

    assert epic_distance_samples(_progress, shaped, *batch, GAMMA) == pytest.approx(0, abs=1e-6)


def test_samples_negated_reward_gives_one_and_pure_shaping_gives_nan():
    batch = _continuous_batch()
    assert epic_distance_samples(_progress, lambda o, a, n: -_progress(o, a, n), *batch, GAMMA) == pytest.approx(1)
    with pytest.warns(ZeroVarianceWarning):
        d = epic_distance_samples(_progress, lambda o, a, n: GAMMA * _phi(n) - _phi(o), *batch, GAMMA)
    assert math.isnan(d)


def test_samples_deduplicate_states_without_changing_the_estimate():
    obs, acts, nxt, mo, ma = _continuous_batch(n=50)
    traj_next = {k: np.roll(v, -1, axis=0) for k, v in obs.items()}  # s'_t = s_{t+1}, as in trajectories
    calls = []

    def counted(o, a, n):
        calls.append(len(a))
        return _progress(o, a, n)

    c = canonicalize_samples(counted, obs, acts, traj_next, mo, ma, GAMMA, chunk_size=10_000)
    assert sum(calls) == 50 * 64 + 64 * 64 + 50  # 50 distinct states + 64 mean states, not 100 + 64
    want = np.array([_progress({k: v[i:i + 1] for k, v in obs.items()}, acts[i:i + 1],
                               {k: v[i:i + 1] for k, v in traj_next.items()})[0] for i in range(50)])
    m = np.array([np.mean(_progress({k: np.repeat(v[i:i + 1], 64, 0) for k, v in obs.items()}, ma, mo))
                  for i in range(50)])
    mu = np.mean([np.mean(_progress({k: np.repeat(v[j:j + 1], 64, 0) for k, v in mo.items()}, ma, mo))
                  for j in range(64)])
    np.testing.assert_allclose(c, want + GAMMA * np.roll(m, -1) - m - GAMMA * mu, atol=1e-10)


def test_samples_reject_a_reward_of_the_wrong_shape():
    batch = _continuous_batch(n=10, n_m=4)
    with pytest.raises(ValueError, match="returned shape"):
        epic_distance_samples(_progress, lambda o, a, n: np.zeros((len(a), 2)), *batch, GAMMA)


def test_pearson_distance_clips_round_off_and_weights():
    x = np.array([1.0, 2.0, 3.0])
    assert pearson_distance(x, 2 * x) == pytest.approx(0, abs=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pearson_distance(x, x, weights=[0.0, 1.0, 1.0]) == pytest.approx(0, abs=1e-7)


def test_pearson_distance_of_hand_computed_weighted_correlations():
    x, y = np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 2.0])
    w = np.array([0.5, 0.25, 0.25])
    xc, yc = x - w @ x, y - w @ y
    rho = (w @ (xc * yc)) / math.sqrt((w @ (xc * xc)) * (w @ (yc * yc)))
    assert pearson_distance(x, y, weights=2 * w) == pytest.approx(math.sqrt((1 - rho) / 2), abs=1e-12)
    assert pearson_distance(x, -x) == pytest.approx(1.0)
    assert pearson_distance([[1.0, 2.0]], [1.0, 3.0]) == pytest.approx(0.0, abs=1e-7)  # flattened first


@pytest.mark.parametrize("weights", [[1.0, -1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0]])
def test_pearson_distance_rejects_bad_weights(weights):
    with pytest.raises(ValueError, match=r"weights must be non-negative with a positive sum and shape \(3,\)"):
        pearson_distance([1.0, 2.0, 3.0], [3.0, 1.0, 2.0], weights=weights)


def test_pearson_distance_rejects_mismatched_shapes_and_flags_non_finite_or_flat_rewards():
    with pytest.raises(ValueError, match=r"x has shape \(3,\), y has \(2,\)"):
        pearson_distance([1.0, 2.0, 3.0], [1.0, 2.0])
    for bad in ([1.0, np.nan, 2.0], [1.0, np.inf, 2.0]):
        with pytest.warns(ZeroVarianceWarning, match="non-finite"):
            assert math.isnan(pearson_distance([1.0, 2.0, 3.0], bad))
        with pytest.warns(ZeroVarianceWarning, match="non-finite"):
            assert math.isnan(pearson_distance(bad, [1.0, 2.0, 3.0]))
    tiny = np.array([0.0, 1e-9, 2e-9])
    assert pearson_distance(tiny, [1.0, 2.0, 3.0]) == pytest.approx(0.0, abs=1e-7)  # small but not flat
    with pytest.warns(ZeroVarianceWarning, match="zero variance"):  # flat next to the raw reward's scale
        assert math.isnan(pearson_distance(tiny, [1.0, 2.0, 3.0], x_scale=1e3))
    with pytest.warns(ZeroVarianceWarning, match="zero variance"):
        assert math.isnan(pearson_distance([1.0, 2.0, 3.0], tiny, y_scale=1e3))


def test_tabular_inputs_are_checked_by_name():
    r = np.zeros((2, 2, 2))
    with pytest.raises(ValueError, match=r"reward must have shape \(n_S, n_A, n_S\), got \(2, 2, 3\)"):
        canonicalize_tabular(np.zeros((2, 2, 3)), 0.9)
    with pytest.raises(ValueError, match=r"reward must have shape"):
        canonicalize_tabular(np.zeros((2, 2)), 0.9)
    with pytest.raises(ValueError, match=r"action_dist must be a probability vector of length 2; got shape \(2,\), "
                                         r"sum 1.5"):
        canonicalize_tabular(r, 0.9, action_dist=[1.0, 0.5])
    with pytest.raises(ValueError, match="state_dist"):
        canonicalize_tabular(r, 0.9, state_dist=[1.5, -0.5])
    with pytest.raises(ValueError, match=r"coverage has shape \(2, 2\), expected \(2, 2, 2\)"):
        epic_distance_tabular(r, r, 0.9, coverage=np.ones((2, 2)))
    for ok in (0.0, 1.0):
        canonicalize_tabular(r, ok)
    with pytest.raises(ValueError, match=r"discount=-0.1 must lie in \[0, 1\]"):
        canonicalize_tabular(r, -0.1)


def test_sample_inputs_are_checked_and_chunking_changes_nothing():
    obs, acts, nxt, mo, ma = _continuous_batch(n=30, n_m=8)
    full, scale = canonicalize_samples(_progress, obs, acts, nxt, mo, ma, GAMMA, return_scale=True)
    small = canonicalize_samples(_progress, obs, acts, nxt, mo, ma, GAMMA, chunk_size=5)
    np.testing.assert_allclose(small, full, atol=1e-12)
    assert scale > float(np.abs(_progress(obs, acts, nxt)).max()) - 1e-12
    with pytest.raises(ValueError, match=r"obs \(30\), acts \(29\) and next_obs \(30\) differ in length"):
        canonicalize_samples(_progress, obs, acts[:29], nxt, mo, ma, GAMMA)
    short = {k: v[:29] for k, v in nxt.items()}
    with pytest.raises(ValueError, match=r"next_obs \(29\)"):
        canonicalize_samples(_progress, obs, acts, short, mo, ma, GAMMA)
    with pytest.raises(ValueError, match=r"mean_obs \(8\) and mean_acts \(7\) must be non-empty and paired"):
        canonicalize_samples(_progress, obs, acts, nxt, mo, ma[:7], GAMMA)
    empty = {k: v[:0] for k, v in mo.items()}
    with pytest.raises(ValueError, match=r"mean_obs \(0\)"):
        canonicalize_samples(_progress, obs, acts, nxt, empty, ma[:0], GAMMA)
    ragged = {"pos": obs["pos"], "vel": obs["vel"][:29]}
    with pytest.raises(ValueError, match="observation fields have different lengths"):
        canonicalize_samples(_progress, ragged, acts, nxt, mo, ma, GAMMA)
    with pytest.raises(ValueError, match="discount"):
        canonicalize_samples(_progress, obs, acts, nxt, mo, ma, 2.0)


def test_samples_work_on_plain_arrays_too():
    rng = np.random.default_rng(1)
    obs, nxt, acts = rng.normal(size=(20, 3)), rng.normal(size=(20, 3)), rng.normal(size=(20, 2))
    mo, ma = rng.normal(size=(6, 3)), rng.normal(size=(6, 2))

    def reward(o, a, n):
        return n[:, 0] - o[:, 0] + a[:, 1]

    def shaped(o, a, n):
        return 3.0 * reward(o, a, n) + GAMMA * np.cos(n[:, 2]) - np.cos(o[:, 2])

    assert epic_distance_samples(reward, shaped, obs, acts, nxt, mo, ma, GAMMA) == pytest.approx(0.0, abs=1e-6)


def test_samples_flag_pure_shaping_as_the_first_reward_too():
    batch = _continuous_batch()
    with pytest.warns(ZeroVarianceWarning, match="zero variance"):
        d = epic_distance_samples(lambda o, a, n: GAMMA * _phi(n) - _phi(o), _progress, *batch, GAMMA)
    assert math.isnan(d)


def test_samples_hand_every_column_of_the_mean_states_to_the_reward():
    obs, acts, nxt, mo, ma = _continuous_batch(n=6, n_m=3)

    def summed(o, a, n):  # reads every column of next_obs, so a widened next state changes it
        return np.sum(n["pos"], axis=1) - o["vel"][:, 0]

    c = canonicalize_samples(summed, obs, acts, nxt, mo, ma, GAMMA)
    m = np.array([np.mean(summed({k: np.repeat(v[i:i + 1], 3, 0) for k, v in obs.items()}, ma, mo)) for i in range(6)])
    m_next = np.array([np.mean(summed({k: np.repeat(v[i:i + 1], 3, 0) for k, v in nxt.items()}, ma, mo))
                       for i in range(6)])
    mu = np.mean([np.mean(summed({k: np.repeat(v[j:j + 1], 3, 0) for k, v in mo.items()}, ma, mo)) for j in range(3)])
    np.testing.assert_allclose(c, summed(obs, acts, nxt) + GAMMA * m_next - m - GAMMA * mu, atol=1e-12)


def test_samples_keep_each_reward_call_within_the_chunk_size():
    obs, acts, nxt, mo, ma = _continuous_batch(n=10, n_m=4)
    calls = []

    def counted(o, a, n):
        calls.append(len(a))
        return _progress(o, a, n)

    canonicalize_samples(counted, obs, acts, nxt, mo, ma, GAMMA, chunk_size=4)
    assert max(calls[:-1]) == 4  # one state x 4 mean samples per call; the last call is the batch itself


def test_samples_report_the_largest_reward_even_when_every_reward_is_below_one():
    obs, acts, nxt, mo, ma = _continuous_batch(n=5, n_m=3)

    def small(o, a, n):
        return 1e-3 * np.tanh(n["vel"][:, 0])

    _, scale = canonicalize_samples(small, obs, acts, nxt, mo, ma, GAMMA, return_scale=True)
    evaluated = np.concatenate([small(obs, acts, nxt)] + [
        small({k: np.repeat(v[i:i + 1], 3, 0) for k, v in s.items()}, ma, mo)
        for s in (obs, nxt, mo) for i in range(len(s["vel"]))])
    assert scale == float(np.abs(evaluated).max()) and scale < 1e-3


def test_a_wrong_shape_error_names_the_reward():
    batch = _continuous_batch(n=4, n_m=2)

    def wide(o, a, n):
        return np.zeros((len(a), 2))

    class Wide:
        def __call__(self, o, a, n):
            return np.zeros((len(a), 2))

        def __repr__(self):
            return "Wide()"

    with pytest.raises(ValueError, match=r"reward 'wide' returned shape \(\d+, 2\)"):
        canonicalize_samples(wide, *batch, GAMMA)
    with pytest.raises(ValueError, match=r"reward Wide\(\) returned shape \(\d+, 2\)"):  # no __name__: its repr
        canonicalize_samples(Wide(), *batch, GAMMA)


def test_a_state_distribution_may_put_zero_mass_on_a_state(setup):
    r, shaping, p_s, p_a, cov = setup
    p = np.array([0.5, 0.5, 0.0, 0.0, 0.0])
    c = canonicalize_tabular(r, GAMMA, state_dist=p)
    m = np.einsum("xaz,a,z->x", r, np.full(NA, 1 / NA), p)
    np.testing.assert_allclose(c, r + GAMMA * m[None, None, :] - m[:, None, None] - GAMMA * (p @ m), atol=1e-12)


def test_pearson_distance_never_exceeds_one_under_round_off():
    x = np.array([-0.037352741313914764, -0.0718962626163583, -0.018191553833561226, 0.00045190456484387386,
                  0.060462446590010516, 0.029528954836635975, 0.05177365523623436, 0.027094464088929928,
                  -0.0006395821984679954, -0.008686099613705913, 0.04037310996040227])
    assert pearson_distance(x, -0.0014817132427984248 * x) == 1.0  # the raw rho is -1 - 7e-16 here


def test_pearson_distance_accepts_probability_weights_and_small_rewards():
    x, y = np.array([1.0, 2.0, 4.0]), np.array([1.0, 3.0, 2.0])
    d = pearson_distance(x, y)
    assert pearson_distance(x, y, weights=np.full(3, 1 / 3)) == pytest.approx(d, abs=1e-12)
    assert pearson_distance(1e-10 * x, 1e-10 * y) == pytest.approx(d, abs=1e-9)  # small is not flat


@pytest.mark.parametrize("side", ["x", "y"])
def test_pearson_distance_flags_an_all_zero_reward(side):
    other = [1.0, 2.0, 3.0]
    args = ([0.0, 0.0, 0.0], other) if side == "x" else (other, [0.0, 0.0, 0.0])
    with pytest.warns(ZeroVarianceWarning, match="zero variance"):
        assert math.isnan(pearson_distance(*args))


@pytest.mark.parametrize("side", ["x", "y"])
def test_pearson_distance_compares_variance_with_the_squared_scale(side):
    other = np.array([1.0, 3.0, 2.0, 5.0])
    for var, flat in ((5e-17, True), (5e-16, False)):  # threshold 1e-18 * 10**2 = 1e-16
        wobble = np.sqrt(var) * np.array([1.0, -1.0, 1.0, -1.0])
        kw = {f"{side}_scale": 10.0}
        args = (wobble, other) if side == "x" else (other, wobble)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d = pearson_distance(*args, **kw)
        assert math.isnan(d) == flat and any(w.category is ZeroVarianceWarning for w in caught) == flat


@pytest.mark.parametrize("side", ["x", "y"])
def test_pearson_distance_squares_integer_rewards_as_floats(side):
    big = np.array([3_100_000_000, 3_100_000_001] * 2)  # its square overflows int64; relative spread 1.6e-10
    other = [1.0, 2.0, 3.0, 5.0]
    args = (big, other) if side == "x" else (other, big)
    with pytest.warns(ZeroVarianceWarning, match="zero variance"):
        assert math.isnan(pearson_distance(*args))
