"""The vmapped PPO program: K trainings (candidates × seeds) side by side on Brax envs, with Brax's PPO networks,
loss and observation normaliser and optax. Every array of the training state has a leading K axis.

Three compiled functions, built once per (task, settings, K) and independent of the reward programs:
`collect` (a rollout per candidate), `update` (return scaling, episode statistics, PPO epochs) and `evaluate`
(deterministic episodes for the benchmark score). The candidates' rewards are computed between collect and update by
a small per-iteration function (bird/learners/jax_rewards.py), so new reward programs never recompile these.
"""

from __future__ import annotations

import functools
from typing import Any

import flax
import jax
import jax.numpy as jnp
import optax
from brax.training import types as brax_types
from brax.training.acme import running_statistics, specs
from brax.training.agents.ppo import losses as ppo_losses
from brax.training.agents.ppo import networks as ppo_networks

from bird.envs.brax.episodes import episode_env, observation_size, run_episodes
from bird.learners.jax_settings import PPOSettings

__all__ = ["PPOProgram", "TrainState", "Rollout"]

_CLIP = 10.0  # reward clip after return scaling (VecNormalize's, as the CPU path)


@flax.struct.dataclass
class ReturnScale:
    """Running std of the discounted return (VecNormalize's reward scaling), per candidate."""

    ret: jax.Array  # (N,)
    mean: jax.Array
    var: jax.Array
    count: jax.Array


@flax.struct.dataclass
class EpisodeWindow:
    """Finished-episode sums since the last checkpoint and the running sums of unfinished episodes."""

    own: jax.Array  # (N,) running own return
    ref: jax.Array  # (N,) running reference return
    own_sum: jax.Array
    ref_sum: jax.Array
    episodes: jax.Array


@flax.struct.dataclass
class TrainState:
    params: ppo_losses.PPONetworkParams
    opt_state: Any
    normalizer: running_statistics.RunningStatisticsState
    env: Any  # brax State, (N, ...)
    key: jax.Array
    scale: ReturnScale
    window: EpisodeWindow


@flax.struct.dataclass
class Rollout:
    """T decisions of N envs per candidate; next_obs is the true successor (before any auto-reset)."""

    obs: jax.Array
    action: jax.Array
    next_obs: jax.Array
    ref_reward: jax.Array
    done: jax.Array
    truncation: jax.Array
    raw_action: jax.Array
    log_prob: jax.Array
    dist_params: jax.Array


def _where_done(done: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.where(done.reshape(done.shape + (1,) * (x.ndim - done.ndim)), x, y)


class PPOProgram:
    """Compiled functions for K trainings of one task; see the module docstring."""

    def __init__(self, env: Any, score_kind: str, settings: PPOSettings, n_train: int, horizon: int) -> None:
        self.s, self.k, self.horizon, self.kind = settings, n_train, horizon, score_kind
        self.env = episode_env(env, horizon, settings.action_repeat)
        self.obs_size, self.action_size = observation_size(env), int(env.action_size)
        normalize = running_statistics.normalize if settings.normalize_observations else (lambda x, y: x)
        self.network = ppo_networks.make_ppo_networks(
            self.obs_size, self.action_size, preprocess_observations_fn=normalize,
            policy_hidden_layer_sizes=settings.policy_hidden_layer_sizes,
            value_hidden_layer_sizes=settings.value_hidden_layer_sizes)
        self.make_policy = ppo_networks.make_inference_fn(self.network)
        adam = optax.adam(settings.learning_rate)
        self.optimizer = optax.chain(optax.clip_by_global_norm(settings.max_grad_norm), adam) \
            if settings.max_grad_norm is not None else adam
        self.loss = functools.partial(
            ppo_losses.compute_ppo_loss, ppo_network=self.network, entropy_cost=settings.entropy_cost,
            discounting=settings.discounting, gae_lambda=settings.gae_lambda,
            reward_scaling=1.0 if settings.normalize_reward else settings.reward_scaling,
            clipping_epsilon=settings.clipping_epsilon, normalize_advantage=True)
        donate = () if jax.default_backend() == "cpu" else (0,)  # the CPU backend cannot reuse donated buffers
        self.init = jax.jit(jax.vmap(self._init_one))
        self.collect = jax.jit(jax.vmap(self._collect_one), donate_argnums=donate)
        self.update = jax.jit(jax.vmap(self._update_one), donate_argnums=donate)
        self.evaluate = jax.jit(jax.vmap(self._evaluate_one))
        self.reset_window = jax.jit(jax.vmap(self._reset_window_one))

    # -- init -------------------------------------------------------------------------------------------------
    def _init_one(self, key: jax.Array) -> TrainState:
        k_policy, k_value, k_env, k_loop = jax.random.split(key, 4)
        params = ppo_losses.PPONetworkParams(policy=self.network.policy_network.init(k_policy),
                                             value=self.network.value_network.init(k_value))
        state = self.env.reset(jax.random.split(k_env, self.s.num_envs))
        state.info["first_pipeline_state"], state.info["first_obs"] = state.pipeline_state, state.obs
        n = self.s.num_envs
        zeros, zero = jnp.zeros(n), jnp.zeros(())
        return TrainState(
            params=params, opt_state=self.optimizer.init(params),
            normalizer=running_statistics.init_state(specs.Array((self.obs_size,), jnp.dtype("float32"))),
            env=state, key=k_loop, scale=ReturnScale(zeros, zero, jnp.ones(()), jnp.full((), 1e-4)),
            window=EpisodeWindow(zeros, zeros, zero, zero, zero))

    # -- collect ----------------------------------------------------------------------------------------------
    def _step(self, state: Any, action: jax.Array) -> tuple[Any, jax.Array]:
        """Brax's AutoResetWrapper step, keeping the true next observation for the reward programs."""
        info = dict(state.info)
        info["steps"] = jnp.where(state.done > 0, jnp.zeros_like(info["steps"]), info["steps"])
        nstate = self.env.step(state.replace(done=jnp.zeros_like(state.done), info=info), action)
        done = nstate.done > 0
        pipeline = jax.tree.map(lambda x, y: _where_done(done, x, y), nstate.info["first_pipeline_state"],
                                nstate.pipeline_state)
        obs = _where_done(done, nstate.info["first_obs"], nstate.obs)
        return nstate.replace(pipeline_state=pipeline, obs=obs), nstate.obs

    def _collect_one(self, ts: TrainState) -> tuple[TrainState, Rollout]:
        policy = self.make_policy((ts.normalizer, ts.params.policy))
        key, k_roll = jax.random.split(ts.key)

        def body(state: Any, k: jax.Array) -> tuple[Any, Rollout]:
            action, extras = policy(state.obs, k)
            nstate, true_next = self._step(state, action)
            return nstate, Rollout(state.obs, action, true_next, nstate.reward, nstate.done,
                                   nstate.info["truncation"], extras["raw_action"], extras["log_prob"],
                                   extras["distribution_params"])

        env, roll = jax.lax.scan(body, ts.env, jax.random.split(k_roll, self.s.decisions_per_update))
        return ts.replace(env=env, key=key), roll

    # -- update -----------------------------------------------------------------------------------------------
    def _scale_rewards(self, scale: ReturnScale, reward: jax.Array, done: jax.Array) -> tuple[ReturnScale, jax.Array]:
        if not self.s.normalize_reward:
            return scale, reward
        gamma = self.s.discounting

        def body(c: ReturnScale, x: tuple[jax.Array, jax.Array]) -> tuple[ReturnScale, jax.Array]:
            r, d = x
            ret = c.ret * gamma + r
            n = ret.shape[0]
            delta, total = ret.mean() - c.mean, c.count + n
            mean = c.mean + delta * n / total
            var = (c.var * c.count + ret.var() * n + delta**2 * c.count * n / total) / total
            out = jnp.clip(r / jnp.sqrt(var + 1e-8), -_CLIP, _CLIP)
            return ReturnScale(jnp.where(d > 0, 0.0, ret), mean, var, total), out

        return jax.lax.scan(body, scale, (reward, done))

    @staticmethod
    def _episodes(w: EpisodeWindow, reward: jax.Array, ref: jax.Array, done: jax.Array) -> EpisodeWindow:
        def body(c: EpisodeWindow, x: tuple[jax.Array, ...]) -> tuple[EpisodeWindow, None]:
            r, rr, d = x
            own, refr = c.own + r, c.ref + rr
            return EpisodeWindow(own * (1 - d), refr * (1 - d), c.own_sum + (own * d).sum(),
                                 c.ref_sum + (refr * d).sum(), c.episodes + d.sum()), None

        return jax.lax.scan(body, w, (reward, ref, done))[0]

    def _sgd(self, ts: TrainState, data: brax_types.Transition, normalizer: Any, key: jax.Array) -> tuple[Any, Any]:
        grad = jax.value_and_grad(self.loss, has_aux=True)

        def minibatch(carry: tuple[Any, Any, jax.Array], batch: brax_types.Transition) -> tuple[tuple, None]:
            opt_state, params, k = carry
            k, k_loss = jax.random.split(k)
            _, grads = grad(params, normalizer, batch, k_loss)
            updates, opt_state = self.optimizer.update(grads, opt_state)
            return (opt_state, optax.apply_updates(params, updates), k), None

        def epoch(carry: tuple[Any, Any, jax.Array], _: None) -> tuple[tuple, None]:
            opt_state, params, k = carry
            k, k_perm, k_grad = jax.random.split(k, 3)
            shuffled = jax.tree.map(lambda x: jax.random.permutation(k_perm, x).reshape(
                (self.s.num_minibatches, -1) + x.shape[1:]), data)
            (opt_state, params, _), _ = jax.lax.scan(minibatch, (opt_state, params, k_grad), shuffled)
            return (opt_state, params, k), None

        (opt_state, params, _), _ = jax.lax.scan(epoch, (ts.opt_state, ts.params, key), None,
                                                 length=self.s.num_updates_per_batch)
        return opt_state, params

    def _update_one(self, ts: TrainState, roll: Rollout, reward: jax.Array) -> TrainState:
        """reward: (T, N), the candidate's own reward for the rollout (or the reference reward)."""
        key, k_sgd = jax.random.split(ts.key)
        scale, scaled = self._scale_rewards(ts.scale, reward, roll.done)
        window = self._episodes(ts.window, reward, roll.ref_reward, roll.done)
        normalizer = running_statistics.update(ts.normalizer, roll.obs) if self.s.normalize_observations \
            else ts.normalizer
        r, u = self.s.rollouts_per_update, self.s.unroll_length

        def segments(x: jax.Array) -> jax.Array:  # (T, N, ...) -> (R * N, U, ...), Brax's [batch, time] layout
            x = x.reshape((r, u) + x.shape[1:])
            return jnp.swapaxes(x, 1, 2).reshape((r * x.shape[2], u) + x.shape[3:])

        data = brax_types.Transition(
            observation=segments(roll.obs), action=segments(roll.action), reward=segments(scaled),
            discount=segments(1.0 - roll.done), next_observation=segments(roll.next_obs),
            extras={"policy_extras": {"raw_action": segments(roll.raw_action), "log_prob": segments(roll.log_prob),
                                      "distribution_params": segments(roll.dist_params)},
                    "state_extras": {"truncation": segments(roll.truncation)}})
        opt_state, params = self._sgd(ts, data, normalizer, k_sgd)
        return ts.replace(params=params, opt_state=opt_state, normalizer=normalizer, key=key, scale=scale,
                          window=window)

    @staticmethod
    def _reset_window_one(ts: TrainState) -> TrainState:
        w = ts.window
        zero = jnp.zeros(())
        return ts.replace(window=EpisodeWindow(w.own, w.ref, zero, zero, zero))

    # -- evaluate ---------------------------------------------------------------------------------------------
    def _evaluate_one(self, ts: TrainState, reset_keys: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Deterministic episodes from the given reset keys: (quantity (E,), length (E,))."""
        policy = self.make_policy((ts.normalizer, ts.params.policy), deterministic=True)
        return run_episodes(self.env, self.kind, self.horizon, lambda obs, k: policy(obs, k)[0], reset_keys, key)
