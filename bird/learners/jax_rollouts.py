"""Deterministic episodes of the trained JAX policies: saved as rollouts.npz in the format of
bird/learners/rollouts.py (the trajectory store's input), labelled with each candidate's exported reward, and
summed under it at a checkpoint (the own-reward return that train.checkpoint_selection reads)."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from bird.learners.job import ROLLOUT_SEED_BASE
from bird.learners.rollouts import save_rollouts

__all__ = ["collect_rollouts_jax", "eval_own_returns"]


def _record(program: Any, ts: Any, reset_keys: Any) -> dict[str, Any]:
    """(E, horizon, ·) arrays of one candidate's deterministic episodes and the per-episode quantity and length."""
    import jax
    import jax.numpy as jnp

    from bird.envs.brax.score import episode_quantity, signal

    env, kind = program.env, program.kind
    policy = program.make_policy((ts.normalizer, ts.params.policy), deterministic=True)
    state = env.reset(reset_keys)
    first = signal(kind, state)

    def body(carry: tuple, _: None) -> tuple[tuple, dict]:
        s, active, last, length = carry
        action = policy(s.obs, jax.random.PRNGKey(0))[0]
        n = env.step(s, action)
        row = {"obs": s.obs, "actions": action, "next_obs": n.obs, "ref": n.reward, "active": active}
        last = jnp.where(active > 0, signal(kind, n), last)
        length = jnp.where(active > 0, n.info["steps"], length)
        return (n, active * (1.0 - n.done), last, length), row

    n_decisions = -(-program.horizon // env.action_repeat)
    (_, _, last, length), rows = jax.lax.scan(body, (state, jnp.ones_like(first), first, jnp.zeros_like(first)),
                                              None, length=n_decisions)
    return {**rows, "quantity": episode_quantity(kind, first, last, length), "length": length}


@functools.lru_cache(maxsize=8)
def _recorder(program: Any) -> Any:
    """_record vmapped over the training slots and jitted, once per compiled program."""
    import jax

    return jax.jit(jax.vmap(lambda ts, k: _record(program, ts, k)))


def eval_own_returns(program: Any, state: Any, reset_keys: Any, rewards: Any, sums: Any) -> np.ndarray:
    """(K,) each slot's own-reward return on its greedy episodes from `reset_keys` (K, E), mean over the episodes.

    :param rewards: the slots' RewardStep (bird/learners/jax_rewards.py); its component sums are left untouched.
    """
    rec = _recorder(program)(state, reset_keys)  # (K, T, E, ·)
    roll = SimpleNamespace(obs=rec["obs"], action=rec["actions"], next_obs=rec["next_obs"], ref_reward=rec["ref"])
    reward, _ = rewards(roll, sums)
    own = np.asarray((reward * rec["active"]).sum(axis=1), dtype=np.float64)  # rows after an episode's done: 0
    return own.mean(axis=1)


def collect_rollouts_jax(program: Any, state: Any, slot_jobs: list[int], n_live: int, jobs: list[Any],
                         exported: list[Any], random_q: float, scale: float) -> dict[int, str]:
    """Write rollouts.npz for the jobs of the first n_live slots (slot_jobs[s] = the job of slot s); returns
    {job index: path}."""
    import jax
    import jax.numpy as jnp

    n = jobs[0].collect_episodes
    seeds = np.asarray([[ROLLOUT_SEED_BASE + 1000 * jobs[i].seed + k for k in range(n)] for i in slot_jobs])
    keys = jax.vmap(jax.vmap(jax.random.PRNGKey))(seeds)
    rec = jax.device_get(_recorder(program)(state, keys))
    paths = {}
    for slot, i in enumerate(slot_jobs[:n_live]):
        active = rec["active"][slot] > 0  # (T, E)
        order = [(t, e) for e in range(n) for t in range(active.shape[0]) if active[t, e]]  # episode-major
        t_idx, e_idx = (np.asarray(x) for x in zip(*order, strict=True))
        data = {k: np.asarray(rec[k][slot][t_idx, e_idx], dtype=np.float64) for k in ("obs", "actions", "next_obs")}
        data["episode"] = e_idx
        if exported[slot] is None:
            data["reward"] = np.asarray(rec["ref"][slot][t_idx, e_idx], dtype=np.float64)
        else:
            cols = np.asarray(jax.jit(exported[slot].call)(*(jnp.asarray(data[k], jnp.float32)
                                                               for k in ("obs", "actions", "next_obs"))))
            data["reward"] = cols[:, 0].astype(np.float64)
            data.update({f"comp/{c}": cols[:, j + 1].astype(np.float64)
                         for j, c in enumerate(jobs[i].program.components)})
        q = np.asarray(rec["quantity"][slot], dtype=np.float64)
        data.update(score=(q - random_q) / scale, quantity=q, length=np.bincount(e_idx, minlength=n))
        path = Path(jobs[i].out_dir) / "rollouts.npz"
        save_rollouts(path, data)
        paths[i] = str(path)
    return paths
