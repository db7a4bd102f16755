"""Whole episodes of a batch of brax envs under a policy, scored by envs/brax/score.py (traceable; vmap it freely).

Used by the random-policy anchors (baselines.py) and the JAX learner's checkpoint evaluation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bird.envs.brax.score import episode_quantity, signal

__all__ = ["episode_env", "observation_size", "run_episodes"]

Act = Callable[[Any, Any], Any]  # (obs (N, D), key) -> actions (N, A)


def observation_size(env: Any) -> int:
    """Brax's `env.observation_size` from shapes only: the property runs a reset op by op (5 s on Hopper)."""
    import jax

    return int(jax.eval_shape(env.reset, jax.random.PRNGKey(0)).obs.shape[-1])


def episode_env(env: Any, horizon: int, action_repeat: int = 1) -> Any:
    """Batched env with a step counter and done at `horizon` underlying steps (no auto-reset)."""
    from brax.envs.wrappers.training import EpisodeWrapper, VmapWrapper

    return EpisodeWrapper(VmapWrapper(env), horizon, action_repeat)


def run_episodes(wrapped: Any, kind: str, horizon: int, act: Act, reset_keys: Any, key: Any) -> tuple[Any, Any]:
    """One episode per reset key; returns (quantity (N,), length in underlying steps (N,)).

    Finished envs keep stepping (as Brax's evaluator does) but their signal and length are frozen at the done step.
    """
    import jax
    import jax.numpy as jnp

    state = wrapped.reset(reset_keys)
    first = signal(kind, state)
    n_decisions = -(-horizon // wrapped.action_repeat)

    def body(carry, step_key):
        s, active, last, length = carry
        s = wrapped.step(s, act(s.obs, step_key))
        last = jnp.where(active > 0, signal(kind, s), last)
        length = jnp.where(active > 0, s.info["steps"], length)
        return (s, active * (1.0 - s.done), last, length), None

    init = (state, jnp.ones_like(first), first, jnp.zeros_like(first))
    (_, _, last, length), _ = jax.lax.scan(body, init, jax.random.split(key, n_decisions))
    return episode_quantity(kind, first, last, length), length
