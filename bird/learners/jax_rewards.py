"""The candidates' rewards for a rollout, from their exported programs (one small compile per iteration).

Each artefact is exported for exactly one training slot's rollout (T decisions × N envs rows) and `exported.call`
has no vmap rule, so every slot's program is called on that slot's rows (a Python loop over slots inside one jitted
function). Component sums and a finite flag per candidate are carried on the device and read at checkpoints."""

from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp

__all__ = ["RewardStep", "ComponentSums"]


@flax.struct.dataclass
class ComponentSums:
    sums: jax.Array  # (K, C_max) sum of each component since the last checkpoint
    steps: jax.Array  # transitions summed per candidate
    finite: jax.Array  # (K,) bool: every reward and component so far was finite


class RewardStep:
    """Callable (obs, action, next_obs, ref_reward, sums) -> (reward (K, T, N), sums), jitted.

    :param programs: one entry per training slot: a deserialised jax.export.Exported, or None for the reference reward.
    """

    def __init__(self, programs: list[Any | None]) -> None:
        self.k = len(programs)
        self.slots = [(i, exp) for i, exp in enumerate(programs) if exp is not None]
        self.n_components = max([int(exp.out_avals[0].shape[1]) - 1 for _, exp in self.slots] + [1])
        self._fn = jax.jit(self._call)

    def compile(self, roll: Any, acc: ComponentSums) -> None:
        """Compile now, for a rollout shaped like `roll` (arrays or jax.ShapeDtypeStruct): the candidates' code is
        compiled before the first update, where a failure can still be told apart from a training failure."""
        args = (roll.obs, roll.action, roll.next_obs, roll.ref_reward, acc)
        self._fn = jax.jit(self._call).lower(*args).compile()

    def init(self) -> ComponentSums:
        return ComponentSums(jnp.zeros((self.k, self.n_components)), jnp.zeros(()), jnp.ones(self.k, dtype=bool))

    def reset(self, acc: ComponentSums) -> ComponentSums:
        return ComponentSums(jnp.zeros_like(acc.sums), jnp.zeros(()), acc.finite)

    def _call(self, obs: jax.Array, act: jax.Array, nxt: jax.Array, ref: jax.Array,
              acc: ComponentSums) -> tuple[jax.Array, ComponentSums]:
        reward, sums, finite = ref, acc.sums, acc.finite
        for i, exp in self.slots:
            cols = exp.call(obs[i].reshape(-1, obs.shape[-1]), act[i].reshape(-1, act.shape[-1]),
                            nxt[i].reshape(-1, nxt.shape[-1])).reshape(obs.shape[1:3] + (-1,))  # (T, N, 1 + C)
            reward = reward.at[i].set(cols[..., 0])
            sums = sums.at[i, : cols.shape[-1] - 1].add(cols[..., 1:].sum(axis=(0, 1)))
            finite = finite.at[i].set(finite[i] & jnp.isfinite(cols).all())
        steps = acc.steps + obs.shape[1] * obs.shape[2]
        return reward, ComponentSums(sums, steps, finite)

    def __call__(self, roll: Any, acc: ComponentSums) -> tuple[jax.Array, ComponentSums]:
        return self._fn(roll.obs, roll.action, roll.next_obs, roll.ref_reward, acc)
