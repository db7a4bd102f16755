"""R*'s parameter alignment: float literals as parameters, the segment Bradley–Terry fit by SPSA, critic vote ladders."""

import numpy as np
import pytest

from bird.components.alignment import bt_loss, fit_literals, pair_accuracy
from bird.components.critics import cut_segments, ladder_labels, sample_pairs
from bird.components.literals import ThetaProgram, find_literals, substitute
from bird.components.trajectories import TrajectoryStore
from bird.config.schema import EnvConfig
from bird.envs.registry import make_adapter
from bird.reward.checks import random_transitions
from bird.reward.sandbox import SandboxedReward

CODE = '''import numpy as np
SCALE = 0.5  # module level: evaluated once, not a parameter

def compute_reward(obs, action, next_obs, info, unused=0.25):
    w = 2.0  # weight
    up = np.exp(-next_obs["rooty_angle"] ** 2 / 0.3)
    forward = w * next_obs["rootx_vel"] - 0.001 * np.sum(action ** 2, axis=-1)
    return forward + up * SCALE, {"up": up, "forward": forward}
'''


def _segments_and_truth(seed=0, n=20):
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(n, 3))
    true = np.array([1.0, 2.0, 0.5])
    every = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    t = feats @ true
    labelled = np.array([(i, j) if t[i] > t[j] else (j, i) for i, j in every])
    return feats, true, labelled


def test_bt_fit_recovers_a_known_preference_ordering():
    feats, true, labelled = _segments_and_truth()
    returns = lambda thetas: np.asarray(thetas) @ feats.T  # noqa: E731 - segment returns, linear in the literals
    theta0 = np.array([2.0, 0.3, 1.5])  # ranks 16% of the pairs the wrong way round
    before = pair_accuracy(returns(theta0[None])[0], labelled)
    fit = fit_literals(returns, theta0, labelled[:100], iterations=1000, learning_rate=0.01, perturbation=0.1,
                       train_fraction=0.7, rng=np.random.default_rng(1))
    after = pair_accuracy(returns(fit.theta[None])[0], labelled)  # all 190 pairs, 90 never fitted on
    assert fit.accepted and before < 0.85 and after > 0.93
    ratio = fit.theta / fit.theta[0]
    assert ratio[1] > 1.0 > ratio[2]  # the true weights' order (1, 2, 0.5 relative: w1 > w0 > w2)
    assert np.all(np.sign(fit.theta) == np.sign(theta0))  # log-scale steps never flip a literal's sign


def test_bt_fit_skips_parameter_vectors_the_program_cannot_run_and_keeps_the_literals_without_gain():
    feats, _, labelled = _segments_and_truth()
    theta0 = np.array([1.0, 2.0, 0.5])

    def returns(thetas):
        if not np.allclose(thetas, theta0):
            raise RuntimeError("non-finite reward")  # what the sandbox raises for a bad literal vector
        return np.asarray(thetas) @ feats.T

    fit = fit_literals(returns, theta0, labelled, iterations=50, learning_rate=0.01, perturbation=0.1,
                       train_fraction=1.0, rng=np.random.default_rng(0))
    assert fit.record["skipped_steps"] == 50 and not fit.accepted and np.array_equal(fit.theta, theta0)


def test_bt_loss_is_invariant_to_the_rewards_scale_and_prefers_the_right_order():
    r = np.array([3.0, 1.0, 2.0])
    pairs = np.array([[0, 1], [2, 1]])
    assert bt_loss(r, pairs) == pytest.approx(bt_loss(10 * r, pairs))
    assert bt_loss(r, pairs) < bt_loss(-r, pairs)
    assert pair_accuracy(r, np.array([[0, 1], [1, 2], [0, 0]])) == pytest.approx(0.5)


def test_float_literals_are_those_inside_function_bodies_and_substitution_keeps_comments():
    lit = find_literals(CODE)
    assert lit.values.tolist() == [2.0, 0.3, 0.001]  # not SCALE (module level), not the default 0.25, not ints
    tuned = substitute(CODE, lit, np.array([4.0, 0.6, 0.002]))
    assert "w = 4.0  # weight" in tuned and "/ 0.6)" in tuned and "- 0.002 *" in tuned and "SCALE = 0.5" in tuned


@pytest.fixture(scope="module")
def hopper():
    adapter = make_adapter(EnvConfig(id="mujoco/hopper", description="Hop.", horizon=1000))
    return adapter.spec, random_transitions(adapter, 24, 0)


def test_one_sandbox_call_evaluates_the_program_under_many_literal_vectors(hopper):
    spec, b = hopper
    lit = find_literals(CODE)
    thetas = np.stack([lit.values, lit.values * np.array([2.0, 0.5, 3.0])])
    with ThetaProgram(CODE, lit, spec.obs_index, b["obs"], b["actions"], b["next_obs"]) as program:
        both = program(thetas)
    for row, theta in zip(both, thetas, strict=True):
        with SandboxedReward(substitute(CODE, lit, theta), spec.obs_index) as reference:
            expected, _ = reference(b["obs"], b["actions"], b["next_obs"])
        np.testing.assert_allclose(row, expected, rtol=1e-9)
    assert not np.allclose(both[0], both[1])


def test_segments_stay_inside_episodes_and_pairs_are_distinct():
    import random

    store = TrajectoryStore()
    data = {k: np.zeros((30, 2)) for k in ("obs", "actions", "next_obs")}
    store.add({**data, "episode": np.repeat([0, 1, 2], [5, 20, 5])}, np.array([True, False, True]), "c")
    segments = cut_segments(store, 6, 5, random.Random(0))
    assert len(segments) == 6 and all(len(s) == 5 for s in segments)
    assert all(len(set(store.episode[s])) == 1 for s in segments)
    pairs = sample_pairs(6, 100, random.Random(0))
    assert len(pairs) == 15 and len({tuple(sorted(p)) for p in pairs.tolist()}) == 15


def test_the_vote_ladder_takes_the_strictest_rung_that_labels_enough_pairs():
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    votes = np.array([[1, -1, 1], [1, -1, -1], [1, -1, 1], [1, 0, 1], [1, 1, 0]])  # 5 critics × 3 pairs
    labelled, rec = ladder_labels(votes, pairs, [5, 4, 3], min_pairs=1)
    assert rec["rung"] == 5 and labelled.tolist() == [[0, 1]]
    labelled, rec = ladder_labels(votes, pairs, [5, 4, 3], min_pairs=3)
    assert rec["rung"] == 3 and labelled.tolist() == [[0, 1], [4, 5], [3, 2]]  # pair 2 won by its second segment
    labelled, rec = ladder_labels(votes, pairs, [5, 4], min_pairs=3)
    assert rec["rung"] == 4 and len(labelled) == 1  # no rung reaches 3 pairs: the last rung's labels
