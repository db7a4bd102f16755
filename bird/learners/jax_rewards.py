"""The candidates' rewards for a rollout, from their exported programs (one small compile per iteration).

`exported.call` has no vmap rule, so each program is called on its own candidates' slice of the batched rollout
(a Python loop over programs inside one jitted function). Component sums and a finite flag per candidate are carried
on the device and read at checkpoints."""

from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np

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
        groups: dict[int, tuple[Any, list[int]]] = {}
        for i, exp in enumerate(programs):
            if exp is not None:
                groups.setdefault(id(exp), (exp, []))[1].append(i)
        self.groups = [(exp, np.asarray(idx)) for exp, idx in groups.values()]
        self.n_components = max([int(exp.out_avals[0].shape[1]) - 1 for exp, _ in self.groups] + [1])
        self._fn = jax.jit(self._call)

    def init(self) -> ComponentSums:
        return ComponentSums(jnp.zeros((self.k, self.n_components)), jnp.zeros(()), jnp.ones(self.k, dtype=bool))

    def reset(self, acc: ComponentSums) -> ComponentSums:
        return ComponentSums(jnp.zeros_like(acc.sums), jnp.zeros(()), acc.finite)

    def _call(self, obs: jax.Array, act: jax.Array, nxt: jax.Array, ref: jax.Array,
              acc: ComponentSums) -> tuple[jax.Array, ComponentSums]:
        reward, sums, finite = ref, acc.sums, acc.finite
        for exp, idx in self.groups:
            lead = obs[idx].shape[:-1]  # (g, T, N)
            cols = exp.call(obs[idx].reshape(-1, obs.shape[-1]), act[idx].reshape(-1, act.shape[-1]),
                            nxt[idx].reshape(-1, nxt.shape[-1])).reshape(lead + (-1,))
            reward = reward.at[idx].set(cols[..., 0])
            sums = sums.at[idx, : cols.shape[-1] - 1].add(cols[..., 1:].sum(axis=(1, 2)))
            finite = finite.at[idx].set(finite[idx] & jnp.isfinite(cols).all(axis=(1, 2, 3)))
        steps = acc.steps + obs.shape[1] * obs.shape[2]
        return reward, ComponentSums(sums, steps, finite)

    def __call__(self, roll: Any, acc: ComponentSums) -> tuple[jax.Array, ComponentSums]:
        return self._fn(roll.obs, roll.action, roll.next_obs, roll.ref_reward, acc)
