"""A one-dimensional Brax environment small enough to run op by op (`jax.disable_jit()`), for the in-process unit
tests of the JAX learner (test_jax_core_unit.py, test_jax_rollouts_unit.py, test_jax_ppo_unit.py), and the same
dynamics in numpy, so a test's expected values are worked out without the code under test.

A point starts at x0 = (last word of its reset key mod 7) / 10 and moves by v' = v / 2 + a, x' = x + v'; the step's
reward is x' + a / 4 and it terminates once x' > 2. Observations are (x, v, 1); the torso x is the pipeline state's
first body's x, so every score kind reads it."""

from __future__ import annotations

import flax
import jax
import jax.numpy as jnp
import numpy as np
from brax import base
from brax.envs.base import Env, State

GOAL = 2.0


@flax.struct.dataclass
class Body:
    x: base.Transform


def start(word: int | np.ndarray) -> np.ndarray:
    """x0 of a reset key whose last uint32 word is `word`."""
    return (np.asarray(word) % 7) / 10.0


class PointEnv(Env):
    """See the module docstring (one env; Brax's wrappers batch it)."""

    def reset(self, rng: jax.Array) -> State:
        x = (rng[-1] % 7).astype(jnp.float32) / 10.0
        obs = jnp.stack([x, jnp.zeros(()), jnp.ones(())])
        return State(self._body(x), obs, jnp.zeros(()), jnp.zeros(()))

    def step(self, state: State, action: jax.Array) -> State:
        x, v = state.obs[0], state.obs[1]
        v = v / 2 + action[0]
        x = x + v
        obs = jnp.stack([x, v, jnp.ones(())])
        return state.replace(pipeline_state=self._body(x), obs=obs, reward=x + action[0] / 4,
                             done=(x > GOAL).astype(jnp.float32))

    @staticmethod
    def _body(x: jax.Array) -> Body:
        return Body(base.Transform.create(pos=jnp.stack([x, jnp.zeros(()), jnp.zeros(())])[None]))

    @property
    def observation_size(self) -> int:
        return 3

    @property
    def action_size(self) -> int:
        return 1

    @property
    def backend(self) -> str:
        return "point"


def step_np(x: float, v: float, a: float) -> tuple[float, float, float, bool]:
    """(x', v', reward, terminated) of one underlying step, in numpy."""
    v = v / 2 + a
    x = x + v
    return x, v, x + a / 4, x > GOAL


def episode_np(x0: float, act, horizon: int, repeat: int, decisions: int) -> list[dict]:
    """One episode of the episode wrapper (done at `horizon` underlying steps or on termination; it keeps stepping
    after done, as Brax's EpisodeWrapper does): a row per decision with obs, action, next obs, reward, done, steps."""
    x, v, steps, rows = x0, 0.0, 0, []
    for _ in range(decisions):
        obs = np.array([x, v, 1.0])
        a = float(act(obs))
        reward, term = 0.0, False
        for _ in range(repeat):
            x, v, r, term = step_np(x, v, a)
            reward += r
        steps += repeat
        rows.append({"obs": obs, "action": a, "next_obs": np.array([x, v, 1.0]), "reward": reward,
                     "done": steps >= horizon or term, "steps": steps})
    return rows
