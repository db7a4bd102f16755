"""The vmapped PPO program's pieces (bird/learners/jax_core.py) and the candidates' reward step
(bird/learners/jax_rewards.py), run op by op (`jax.disable_jit()`) in this process on a point env (point_env.py) with
tiny networks: return scaling, episode sums, auto-reset, the rollout, the update's [batch, time] layout and loss
settings, with expected values worked out in numpy or from Brax's own functions called with the settings spelled out
(the trainings themselves: test_jax_learner.py)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from brax.training.agents.ppo import losses as ppo_losses
from point_env import PointEnv, start

from bird.envs.brax.episodes import run_episodes
from bird.learners.jax_core import EpisodeWindow, PPOProgram, ReturnScale, Rollout, TrainState, _where_done
from bird.learners.jax_rewards import ComponentSums, RewardStep
from bird.learners.jax_settings import PPOSettings

HORIZON = 5


@pytest.fixture(autouse=True)
def eager():
    with jax.disable_jit():
        yield


def settings(**changes) -> PPOSettings:
    base = dict(num_envs=2, unroll_length=2, batch_size=2, num_minibatches=2, num_updates_per_batch=2,
                learning_rate=0.01, entropy_cost=0.013, discounting=0.9, gae_lambda=0.8, clipping_epsilon=0.25,
                reward_scaling=3.0, normalize_observations=True, action_repeat=1, max_grad_norm=0.5,
                policy_hidden_layer_sizes=(4,), value_hidden_layer_sizes=(5,), normalize_reward=True)
    return PPOSettings(**{**base, **changes})


def program(**changes) -> PPOProgram:
    return PPOProgram(PointEnv(), "displacement", settings(**changes), 1, HORIZON)


def one(tree):
    """Slot 0 of a vmapped result."""
    return jax.tree.map(lambda x: x[0], tree)


# -- small pieces ------------------------------------------------------------------------------------------------
def test_where_done_broadcasts_the_done_flag_over_trailing_axes():
    done = jnp.array([1.0, 0.0, 1.0])
    x, y = jnp.arange(6.0).reshape(3, 2), -jnp.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(_where_done(done, x, y), [[0, 1], [-2, -3], [4, 5]])
    np.testing.assert_array_equal(_where_done(done, jnp.ones(3), jnp.zeros(3)), [1, 0, 1])


def scale_np(scale: dict, rewards: np.ndarray, dones: np.ndarray, gamma: float):
    """VecNormalize's reward scaling, step by step: running mean/var of the discounted return over the envs."""
    ret, mean, var, count = (np.array(scale[k], dtype=np.float64) for k in ("ret", "mean", "var", "count"))
    out = []
    for r, d in zip(rewards, dones, strict=True):
        ret = ret * gamma + r
        n = len(ret)
        delta, total = ret.mean() - mean, count + n
        mean = mean + delta * n / total
        var = (var * count + ret.var() * n + delta ** 2 * count * n / total) / total
        count = total
        out.append(np.clip(r / np.sqrt(var + 1e-8), -10, 10))
        ret = np.where(d > 0, 0.0, ret)
    return dict(ret=ret, mean=mean, var=var, count=count), np.asarray(out)


def test_rewards_are_divided_by_the_running_std_of_the_discounted_return_and_clipped():
    p = program()
    rewards = np.array([[1.0, -3.0], [200.0, -150.0], [2.0, 4.0], [-1.0, 0.25]])
    dones = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    start_scale = dict(ret=[0.5, -1.0], mean=0.2, var=0.01, count=1000.0)
    scale = ReturnScale(*(jnp.asarray(start_scale[k], dtype=jnp.float32) for k in ("ret", "mean", "var", "count")))
    got_scale, got = p._scale_rewards(scale, jnp.asarray(rewards, jnp.float32), jnp.asarray(dones, jnp.float32))
    want_scale, want = scale_np(start_scale, rewards, dones, 0.9)
    assert want[1].tolist() == [10.0, -10.0]  # the clip bites on the 200 and the -150
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for k in ("ret", "mean", "var", "count"):
        np.testing.assert_allclose(getattr(got_scale, k), want_scale[k], rtol=1e-4)


def test_rewards_with_no_spread_yet_are_divided_by_a_small_floor_not_by_zero():
    p = program()
    scale = ReturnScale(jnp.zeros(2), jnp.float32(0.0), jnp.float32(0.0), jnp.float32(1e6))
    _, got = p._scale_rewards(scale, jnp.zeros((3, 2)), jnp.zeros((3, 2)))
    assert np.asarray(got).tolist() == [[0.0, 0.0]] * 3  # 0 / sqrt(0 + 1e-8), not 0 / 0


def test_without_reward_normalisation_rewards_and_the_scale_pass_through():
    p = program(normalize_reward=False)
    scale = ReturnScale(jnp.ones(2), jnp.zeros(()), jnp.ones(()), jnp.ones(()))
    rewards = jnp.array([[1.0, 200.0]])
    got_scale, got = p._scale_rewards(scale, rewards, jnp.zeros((1, 2)))
    assert got_scale is scale and got is rewards


def test_finished_episodes_add_their_own_and_reference_returns_to_the_window():
    w = EpisodeWindow(jnp.array([1.0, 2.0]), jnp.array([10.0, 20.0]), jnp.array(0.5), jnp.array(5.0),
                      jnp.array(1.0))
    reward = jnp.array([[1.0, 3.0], [2.0, 5.0], [4.0, 7.0]])
    ref = jnp.array([[0.1, 0.3], [0.2, 0.5], [0.4, 0.7]])
    done = jnp.array([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    got = PPOProgram._episodes(w, reward, ref, done)
    # env 0: 1 + 1 + 2 = 4 ends at t=1, then 4 runs on; env 1: 2 + 3 = 5 ends at t=0, then 5 + 7 = 12 at t=2
    np.testing.assert_allclose(got.own, [4.0, 0.0])
    np.testing.assert_allclose(got.ref, [0.4, 0.0])
    np.testing.assert_allclose(got.own_sum, 0.5 + 4.0 + 5.0 + 12.0)
    np.testing.assert_allclose(got.ref_sum, 5.0 + 10.3 + 20.3 + 1.2, rtol=1e-6)
    np.testing.assert_allclose(got.episodes, 4.0)


def test_resetting_the_window_keeps_running_episodes_and_clears_the_sums():
    p = program()
    window = EpisodeWindow(jnp.array([[1.0, 2.0]]), jnp.array([[3.0, 4.0]]), jnp.array([5.0]), jnp.array([6.0]),
                           jnp.array([7.0]))
    ts = TrainState(None, None, None, None, jnp.zeros((1, 2), jnp.uint32), None, window)  # only the window counts
    w = p.reset_window(ts).window
    np.testing.assert_array_equal(w.own, [[1.0, 2.0]])
    np.testing.assert_array_equal(w.ref, [[3.0, 4.0]])
    assert w.own_sum.tolist() == w.ref_sum.tolist() == w.episodes.tolist() == [0.0]


# -- init, step, collect -----------------------------------------------------------------------------------------
def test_init_draws_networks_envs_and_loop_key_from_one_key_each():
    p = program()
    key = jax.random.PRNGKey(11)
    ts = one(p.init(key[None]))
    k_policy, k_value, k_env, k_loop = jax.random.split(key, 4)
    np.testing.assert_array_equal(ts.key, k_loop)
    shapes = jax.tree.map(lambda x: x.shape, (ts.params.policy["params"], ts.params.value["params"]))
    assert shapes == ({"hidden_0": {"bias": (4,), "kernel": (3, 4)}, "hidden_1": {"bias": (2,), "kernel": (4, 2)}},
                      {"hidden_0": {"bias": (5,), "kernel": (3, 5)}, "hidden_1": {"bias": (1,), "kernel": (5, 1)}})
    for got, want in ((ts.params.policy, p.network.policy_network.init(k_policy)),
                      (ts.params.value, p.network.value_network.init(k_value))):
        jax.tree.map(np.testing.assert_array_equal, got, want)
    words = np.asarray(jax.random.split(k_env, 2))[:, -1]
    np.testing.assert_allclose(ts.env.obs[:, 0], start(words), rtol=1e-6)
    np.testing.assert_array_equal(ts.env.info["first_obs"], ts.env.obs)
    np.testing.assert_array_equal(ts.env.info["first_pipeline_state"].x.pos, ts.env.pipeline_state.x.pos)
    assert ts.scale.ret.tolist() == [0.0, 0.0] and float(ts.scale.mean) == 0.0 and float(ts.scale.var) == 1.0
    assert float(ts.scale.count) == pytest.approx(1e-4)
    assert ts.window.own.shape == (2,) and float(ts.window.episodes) == 0.0 and float(ts.window.own_sum) == 0.0
    assert float(ts.window.ref_sum) == 0.0 and ts.window.ref.tolist() == [0.0, 0.0]
    assert ts.normalizer.mean.tolist() == [0.0, 0.0, 0.0]
    p.optimizer.init(ts.params)  # the optimiser state is the optimiser's, for these parameters
    jax.tree.map(np.testing.assert_array_equal, ts.opt_state, p.optimizer.init(ts.params))


def test_init_starts_one_env_per_num_envs():
    ts = one(program(num_envs=3, batch_size=3).init(jax.random.PRNGKey(11)[None]))
    assert ts.env.obs.shape == (3, 3) and ts.scale.ret.shape == (3,)


def test_a_step_resets_finished_envs_but_returns_their_true_next_observation():
    p = program()
    state = p.env.reset(jnp.array([[0, 3], [0, 5]], dtype=jnp.uint32))  # x0 = 0.3, 0.5
    state.info["first_pipeline_state"], state.info["first_obs"] = state.pipeline_state, state.obs
    state = state.replace(done=jnp.array([0.0, 1.0]))
    state.info["steps"] = jnp.array([2.0, 4.0])
    nstate, true_next = p._step(state, jnp.array([[2.0], [0.1]]))
    # env 0: v = 2, x = 2.3 > 2: terminated, so reset to its first state; env 1 was done: its step count restarts
    np.testing.assert_allclose(true_next, [[2.3, 2.0, 1.0], [0.6, 0.1, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(nstate.obs, [[0.3, 0.0, 1.0], [0.6, 0.1, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(nstate.pipeline_state.x.pos[:, 0, 0], [0.3, 0.6], rtol=1e-6)
    np.testing.assert_array_equal(nstate.done, [1.0, 0.0])
    np.testing.assert_array_equal(nstate.info["steps"], [3.0, 1.0])
    np.testing.assert_allclose(nstate.reward, [2.3 + 0.5, 0.6 + 0.025], rtol=1e-6)


class NeverSetsDone(PointEnv):
    """A task whose step leaves `done` as it came (it never terminates): only the episode limit ends an episode."""

    def step(self, state, action):
        return super().step(state, action).replace(done=state.done)


def test_a_step_starts_a_finished_env_afresh_even_when_the_env_never_sets_done():
    p = PPOProgram(NeverSetsDone(), "displacement", settings(), 1, HORIZON)
    state = p.env.reset(jnp.array([[0, 3], [0, 5]], dtype=jnp.uint32))
    state.info["first_pipeline_state"], state.info["first_obs"] = state.pipeline_state, state.obs
    state = state.replace(done=jnp.array([0.0, 1.0]))  # env 1 reached its limit on the last step
    state.info["steps"] = jnp.array([2.0, HORIZON])
    nstate, _ = p._step(state, jnp.array([[2.0], [0.1]]))
    np.testing.assert_array_equal(nstate.done, [0.0, 0.0])  # env 1's new episode is not over at its first step
    np.testing.assert_array_equal(nstate.info["steps"], [3.0, 1.0])


def test_a_rollout_records_the_policys_decisions_and_the_true_successors():
    p = program()
    ts0 = p.init(jax.random.split(jax.random.PRNGKey(3), 1))
    ts, roll = p.collect(ts0)
    ts, roll, ts0 = one(ts), one(roll), one(ts0)
    key, k_roll = jax.random.split(ts0.key)
    np.testing.assert_array_equal(ts.key, key)
    policy = p.make_policy((ts0.normalizer, ts0.params.policy))
    env, t_len = ts0.env, p.s.decisions_per_update
    assert roll.obs.shape == (t_len, 2, 3) and roll.action.shape == (t_len, 2, 1) and roll.done.shape == (t_len, 2)
    for t, k in enumerate(jax.random.split(k_roll, t_len)):
        action, extras = policy(env.obs, k)
        np.testing.assert_allclose(roll.obs[t], env.obs, rtol=1e-6)
        np.testing.assert_allclose(roll.action[t], action, rtol=1e-6)
        np.testing.assert_allclose(roll.raw_action[t], extras["raw_action"], rtol=1e-6)
        np.testing.assert_allclose(roll.log_prob[t], extras["log_prob"], rtol=1e-5)
        np.testing.assert_allclose(roll.dist_params[t], extras["distribution_params"], rtol=1e-6)
        env, true_next = p._step(env, action)
        np.testing.assert_allclose(roll.next_obs[t], true_next, rtol=1e-6)
        np.testing.assert_allclose(roll.ref_reward[t], env.reward, rtol=1e-6)
        np.testing.assert_array_equal(roll.done[t], env.done)
        np.testing.assert_array_equal(roll.truncation[t], env.info["truncation"])
    np.testing.assert_allclose(ts.env.obs, env.obs, rtol=1e-6)


# -- update ------------------------------------------------------------------------------------------------------
def test_the_loss_is_brax_ppo_with_the_settings_values():
    p = program()
    ts = one(p.init(jax.random.split(jax.random.PRNGKey(5), 1)))
    _, roll = p.collect(jax.tree.map(lambda x: x[None], ts))
    roll = one(roll)
    data = _transition(roll, roll.ref_reward)
    key = jax.random.PRNGKey(9)
    want = functools.partial(ppo_losses.compute_ppo_loss, ppo_network=p.network, entropy_cost=0.013, discounting=0.9,
                             gae_lambda=0.8, reward_scaling=1.0, clipping_epsilon=0.25, normalize_advantage=True)
    got_loss, got_metrics = p.loss(ts.params, ts.normalizer, data, key)
    want_loss, want_metrics = want(ts.params, ts.normalizer, data, key)
    np.testing.assert_allclose(got_loss, want_loss, rtol=1e-6)
    for k in want_metrics:
        np.testing.assert_allclose(got_metrics[k], want_metrics[k], rtol=1e-6)
    # without return scaling, the task's reward_scaling multiplies the reward
    q = program(normalize_reward=False)
    want3 = functools.partial(want, ppo_network=q.network, reward_scaling=3.0)
    np.testing.assert_allclose(q.loss(ts.params, ts.normalizer, data, key)[0],
                               want3(ts.params, ts.normalizer, data, key)[0], rtol=1e-6)
    assert not np.isclose(float(want_loss), float(want3(ts.params, ts.normalizer, data, key)[0]))


def test_the_loss_uses_the_settings_discount_and_clip_away_from_brax_defaults():
    """Brax's defaults are discounting 0.9 and clipping 0.3; parameters moved away from the ones that collected the
    data make the probability ratios leave the clip range, so both settings change the loss."""
    p = program(discounting=0.5, clipping_epsilon=0.05)
    ts = one(p.init(jax.random.split(jax.random.PRNGKey(5), 1)))
    _, roll = p.collect(jax.tree.map(lambda x: x[None], ts))
    data = _transition(one(roll), one(roll).ref_reward)
    moved = jax.tree.map(lambda x: x + 0.5 * jnp.sign(x + 0.1), ts.params)
    key = jax.random.PRNGKey(9)
    base = dict(ppo_network=p.network, entropy_cost=0.013, gae_lambda=0.8, reward_scaling=1.0, normalize_advantage=True)
    want = functools.partial(ppo_losses.compute_ppo_loss, discounting=0.5, clipping_epsilon=0.05, **base)
    got = float(p.loss(moved, ts.normalizer, data, key)[0])
    assert got == pytest.approx(float(want(moved, ts.normalizer, data, key)[0]), rel=1e-6)
    for other in (dict(discounting=0.9, clipping_epsilon=0.05), dict(discounting=0.5, clipping_epsilon=0.3)):
        wrong = functools.partial(ppo_losses.compute_ppo_loss, **other, **base)
        assert got != pytest.approx(float(wrong(moved, ts.normalizer, data, key)[0]), rel=1e-4), other


def _transition(roll: Rollout, reward):
    from brax.training import types as brax_types

    seg = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731 - (T, N) -> (N, T): one segment per env (T = unroll length)
    return brax_types.Transition(
        observation=seg(roll.obs), action=seg(roll.action), reward=seg(reward), discount=seg(1.0 - roll.done),
        next_observation=seg(roll.next_obs),
        extras={"policy_extras": {"raw_action": seg(roll.raw_action), "log_prob": seg(roll.log_prob),
                                  "distribution_params": seg(roll.dist_params)},
                "state_extras": {"truncation": seg(roll.truncation)}})


def test_gradients_are_clipped_to_max_grad_norm_before_adam():
    grads = [{"w": jnp.array([30.0, 40.0])}, {"w": jnp.array([0.3, -0.4])}]
    for max_norm, want_opt in ((0.5, optax.chain(optax.clip_by_global_norm(0.5), optax.adam(0.01))),
                               (None, optax.adam(0.01))):
        opt = program(max_grad_norm=max_norm).optimizer
        params = {"w": jnp.zeros(2)}
        state, want_state = opt.init(params), want_opt.init(params)
        for g in grads:
            upd, state = opt.update(g, state)
            want, want_state = want_opt.update(g, want_state)
            np.testing.assert_allclose(upd["w"], want["w"], rtol=1e-6)
    clipped, plain = (program(max_grad_norm=m).optimizer for m in (0.5, None))
    params = {"w": jnp.zeros(2)}
    a, b = clipped.init(params), plain.init(params)
    for g in grads:
        ua, a = clipped.update(g, a)
        ub, b = plain.update(g, b)
    assert not np.allclose(ua["w"], ub["w"], rtol=1e-3)


def test_observations_are_normalised_only_when_the_settings_say_so():
    obs = jnp.array([[4.0, 2.0, 1.0]])
    for normalize in (True, False):
        p = program(normalize_observations=normalize)
        ts = one(p.init(jax.random.split(jax.random.PRNGKey(1), 1)))
        from brax.training.acme import running_statistics

        shifted = running_statistics.update(ts.normalizer, jnp.array([[10.0, -5.0, 1.0], [12.0, -3.0, 1.0]]))
        a = p.make_policy((ts.normalizer, ts.params.policy), deterministic=True)(obs, None)[0]
        b = p.make_policy((shifted, ts.params.policy), deterministic=True)(obs, None)[0]
        assert np.allclose(a, b) is not normalize


def test_an_update_trains_on_the_scaled_reward_in_brax_batch_time_segments(monkeypatch):
    p = program(unroll_length=2, batch_size=2, num_minibatches=2, num_updates_per_batch=2)  # T = 4: 2 segments/env
    ts0 = p.init(jax.random.split(jax.random.PRNGKey(7), 1))
    ts0, roll = p.collect(ts0)
    ts0, roll = one(ts0), one(roll)
    reward = jnp.arange(8.0).reshape(4, 2) * 0.5 - 1.0
    seen = []
    real = p.loss

    def spy(params, normalizer, data, key):
        seen.append((jax.tree.map(np.asarray, data), np.asarray(normalizer.mean)))
        return real(params, normalizer, data, key)

    monkeypatch.setattr(p, "loss", spy)
    ts = p._update_one(ts0, roll, reward)
    assert len(seen) == 2 * 2  # epochs x minibatches
    want_scale, scaled = scale_np({k: np.asarray(getattr(ts0.scale, k)) for k in ("ret", "mean", "var", "count")},
                                  np.asarray(reward), np.asarray(roll.done), 0.9)
    # every minibatch is one of the 4 segments (2 envs x 2 halves of the rollout) in time order, each epoch all of them
    segments = {}
    for e in range(2):
        for r in range(2):
            rows = slice(2 * r, 2 * r + 2)
            segments[(e, r)] = dict(observation=np.asarray(roll.obs[rows, e]), reward=scaled[rows, e],
                                    discount=1.0 - np.asarray(roll.done[rows, e]),
                                    next_observation=np.asarray(roll.next_obs[rows, e]),
                                    action=np.asarray(roll.action[rows, e]))
    for epoch in (seen[:2], seen[2:]):
        found = []
        for data, count in epoch:
            assert data.observation.shape == (2, 2, 3)  # the loss sees the normaliser updated with the rollout:
            np.testing.assert_allclose(count, np.asarray(roll.obs).reshape(-1, 3).mean(axis=0), rtol=1e-5)
            for j in range(2):
                match = [k for k, seg in segments.items() if np.allclose(seg["observation"], data.observation[j])]
                assert len(match) == 1
                seg = segments[match[0]]
                np.testing.assert_allclose(data.reward[j], seg["reward"], rtol=1e-4)
                np.testing.assert_allclose(data.discount[j], seg["discount"])
                np.testing.assert_allclose(data.next_observation[j], seg["next_observation"], rtol=1e-6)
                np.testing.assert_allclose(data.action[j], seg["action"], rtol=1e-6)
                found += match
        assert sorted(found) == sorted(segments)  # each epoch: every segment once
    key, k_sgd = jax.random.split(ts0.key)
    np.testing.assert_array_equal(ts.key, key)
    # the SGD as a plain loop: the same keys, permutations, minibatches and optimiser steps
    layout = lambda x: jnp.stack([jnp.asarray(x)[2 * r:2 * r + 2, e] for r in range(2) for e in range(2)])  # noqa: E731
    full = _transition(roll, jnp.asarray(scaled, jnp.float32))
    full = jax.tree.map(lambda x: layout(jnp.swapaxes(x, 0, 1)), full)  # (N, T) back to (T, N), then segments
    grad = jax.grad(lambda *a: real(*a)[0])
    params, opt_state, k = ts0.params, ts0.opt_state, k_sgd
    for epoch in range(2):
        k, k_perm, k_grad = jax.random.split(k, 3)
        shuffled = jax.tree.map(lambda x, kp=k_perm: jax.random.permutation(kp, x).reshape((2, -1) + x.shape[1:]), full)
        for m in range(2):
            batch = jax.tree.map(lambda x, i=m: x[i], shuffled)
            np.testing.assert_allclose(seen[2 * epoch + m][0].observation, batch.observation, rtol=1e-6)
            k_grad, k_loss = jax.random.split(k_grad)
            updates, opt_state = p.optimizer.update(grad(params, ts.normalizer, batch, k_loss), opt_state)
            params = optax.apply_updates(params, updates)
    for got, want in ((ts.params, params), (ts.opt_state, opt_state)):
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-6), got, want)
    for k in ("ret", "mean", "var", "count"):
        np.testing.assert_allclose(getattr(ts.scale, k), want_scale[k], rtol=1e-4)
    window = PPOProgram._episodes(ts0.window, reward, roll.ref_reward, roll.done)  # the candidate's reward, not ref
    for k in ("own", "ref", "own_sum", "ref_sum", "episodes"):
        np.testing.assert_allclose(getattr(ts.window, k), getattr(window, k), rtol=1e-6)
    np.testing.assert_allclose(ts.normalizer.mean, np.asarray(roll.obs).reshape(-1, 3).mean(axis=0), rtol=1e-5)
    changed = jax.tree.map(lambda a, b: not np.allclose(a, b), ts.params.policy, ts0.params.policy)
    assert any(jax.tree.leaves(changed))  # it trained


def test_without_observation_normalisation_the_update_keeps_the_normaliser(monkeypatch):
    p = program(normalize_observations=False)
    ts0, roll = p.collect(p.init(jax.random.split(jax.random.PRNGKey(2), 1)))
    monkeypatch.setattr(p, "_sgd", lambda ts, data, normalizer, key: (ts.opt_state, ts.params))  # no SGD: op by op
    ts = p.update(ts0, roll, roll.ref_reward)
    np.testing.assert_array_equal(ts.normalizer.mean, ts0.normalizer.mean)
    assert not np.allclose(roll.obs.mean(axis=(1, 2)), 0.0)


def test_evaluation_runs_the_greedy_policy_from_the_given_reset_keys():
    p = program()
    ts = p.init(jax.random.split(jax.random.PRNGKey(4), 1))
    reset_keys = jnp.array([[[0, 1], [0, 6]]], dtype=jnp.uint32)
    key = jax.random.PRNGKey(8)[None]
    q, length = p.evaluate(ts, reset_keys, key)
    t = one(ts)
    greedy = p.make_policy((t.normalizer, t.params.policy), deterministic=True)
    want_q, want_len = run_episodes(p.env, "displacement", HORIZON, lambda o, k: greedy(o, k)[0], reset_keys[0],
                                    key[0])
    np.testing.assert_allclose(q[0], want_q, rtol=1e-6)
    np.testing.assert_array_equal(length[0], want_len)
    noisy = p.make_policy((t.normalizer, t.params.policy), deterministic=False)
    other, _ = run_episodes(p.env, "displacement", HORIZON, lambda o, k: noisy(o, k)[0], reset_keys[0], key[0])
    assert not np.allclose(other, want_q)


def test_the_program_keeps_its_width_horizon_and_score_kind():
    p = PPOProgram(PointEnv(), "survival", settings(action_repeat=2), 3, 9)
    assert (p.k, p.horizon, p.kind, p.obs_size, p.action_size) == (3, 9, "survival", 3, 1)
    assert p.env.episode_length == 9 and p.env.action_repeat == 2
    ts = p.init(jax.random.split(jax.random.PRNGKey(0), 3))
    assert ts.env.obs.shape == (3, 2, 3)


# -- the candidates' reward step ---------------------------------------------------------------------------------
T, N = 2, 3  # time steps, envs: T differs from the observation size (3), so rows are cut from the last axis


def export(fn, rows: int = T * N):
    shapes = [jax.ShapeDtypeStruct((rows, d), jnp.float32) for d in (3, 1, 3)]
    return jax.export.export(jax.jit(fn))(*shapes)


# exported when a test first needs them, not at collection: JAX started at import in mutmut's fork server leaves its
# forked mutant runs waiting on a lock of a thread they do not have (each mutant "timed out")
@functools.cache
def programs() -> tuple:
    two = export(lambda o, a, n: jnp.stack([n[:, 0] - a[:, 0], n[:, 1], 2 * o[:, 0]], axis=1))  # reward, 2 comps
    one = export(lambda o, a, n: jnp.stack([n[:, 0] * 3, jnp.log(n[:, 1])], axis=1))  # 1 component, NaN where v < 0
    return two, one


def rollout(k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    arr = lambda *shape: jnp.asarray(rng.normal(size=shape), dtype=jnp.float32)  # noqa: E731
    return Rollout(arr(k, T, N, 3), arr(k, T, N, 1), arr(k, T, N, 3), arr(k, T, N), *(jnp.zeros((k, T, N)),) * 2,
                   jnp.zeros((k, T, N, 1)), jnp.zeros((k, T, N)), jnp.zeros((k, T, N, 2)))


def test_each_slot_gets_its_programs_reward_and_the_reference_slot_keeps_its_own():
    TWO, ONE = programs()
    step = RewardStep([TWO, None, ONE])
    assert step.n_components == 2
    roll = rollout(3)
    roll = roll.replace(next_obs=roll.next_obs.at[2, :, :, 1].set(jnp.abs(roll.next_obs[2, :, :, 1]) + 0.1))
    acc0 = step.init()
    assert acc0.sums.shape == (3, 2) and acc0.finite.tolist() == [True] * 3 and float(acc0.steps) == 0.0
    reward, acc = step(roll, acc0)
    o, a, n = (np.asarray(x, dtype=np.float64) for x in (roll.obs, roll.action, roll.next_obs))
    np.testing.assert_allclose(reward[0], n[0, ..., 0] - a[0, ..., 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reward[1], roll.ref_reward[1])
    np.testing.assert_allclose(reward[2], 3 * n[2, ..., 0], rtol=1e-5)
    np.testing.assert_allclose(acc.sums[0], [n[0, ..., 1].sum(), 2 * o[0, ..., 0].sum()], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(acc.sums[1], [0.0, 0.0])
    np.testing.assert_allclose(acc.sums[2], [np.log(n[2, ..., 1]).sum(), 0.0], rtol=1e-4)
    assert float(acc.steps) == T * N and acc.finite.tolist() == [True] * 3
    reward2, acc2 = step(roll, acc)  # sums and steps accumulate until reset
    np.testing.assert_allclose(acc2.sums, 2 * np.asarray(acc.sums), rtol=1e-5)
    assert float(acc2.steps) == 2 * T * N
    again = step.reset(acc2)
    assert np.asarray(again.sums).tolist() == [[0.0, 0.0]] * 3 and float(again.steps) == 0.0


def test_a_non_finite_value_marks_only_its_slot_and_stays_marked_after_reset():
    TWO, ONE = programs()
    step = RewardStep([ONE, TWO])
    roll = rollout(2, seed=1)
    roll = roll.replace(next_obs=roll.next_obs.at[0, 1, 0, 1].set(-1.0))  # log(-1): NaN in slot 0 only
    _, acc = step(roll, step.init())
    assert acc.finite.tolist() == [False, True]
    fine = roll.replace(next_obs=jnp.abs(roll.next_obs) + 0.1)
    _, acc = step(fine, step.reset(acc))
    assert acc.finite.tolist() == [False, True]


def test_a_reference_only_step_has_one_component_column():
    step = RewardStep([None, None])
    assert step.k == 2 and step.n_components == 1 and step.slots == []
    roll = rollout(2)
    reward, acc = step(roll, step.init())
    np.testing.assert_array_equal(reward, roll.ref_reward)
    assert acc.sums.shape == (2, 1)


def test_the_reward_step_compiles_ahead_for_a_rollouts_shapes():
    TWO, _ = programs()
    step = RewardStep([TWO])
    roll = rollout(1)
    with jax.disable_jit(False):
        step.compile(jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), roll),
                     jax.eval_shape(step.init))
        reward, acc = step(roll, step.init())
    n, a = np.asarray(roll.next_obs), np.asarray(roll.action)
    np.testing.assert_allclose(reward[0], n[0, ..., 0] - a[0, ..., 0], rtol=1e-5, atol=1e-6)
    assert isinstance(acc, ComponentSums) and float(acc.steps) == T * N
