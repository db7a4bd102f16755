"""Deterministic episodes of the trained JAX policies: the arrays of rollouts.npz (bird/learners/rollouts.py, the
trajectory store's input), labelled with each candidate's exported reward, and summed under it at a checkpoint (the
own-reward return that train.checkpoint_selection reads)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from bird.learners.job import ROLLOUT_SEED_BASE

__all__ = ["record_rollouts_jax", "eval_own_returns", "columns"]


def columns(exp: Any, rows: int, *inputs: np.ndarray) -> np.ndarray:
    """An artefact exported for exactly `rows` rows, called on any number of rows: zero-padded chunks of `rows`
    (the padding rows' values are dropped). float32 in, (n, 1 + C) float64 out."""
    import jax

    call = jax.jit(exp.call)
    n = len(inputs[0])
    out = []
    for start in range(0, max(n, 1), rows):
        chunk = [np.asarray(x[start:start + rows], dtype=np.float32) for x in inputs]
        pad = rows - len(chunk[0])
        chunk = [np.pad(c, ((0, pad), (0, 0))) for c in chunk]
        out.append(np.asarray(call(*chunk), dtype=np.float64)[: rows - pad])
    return np.concatenate(out)[:n]


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


def eval_own_returns(program: Any, state: Any, reset_keys: Any, exported: list[Any], rows: int) -> np.ndarray:
    """(K,) each slot's own-reward return on its greedy episodes from `reset_keys` (K, E), mean over the episodes.

    :param exported: each slot's deserialised artefact (None: the reference reward), exported for `rows` rows.
    """
    import jax

    rec = jax.device_get(_recorder(program)(state, reset_keys))  # (K, T, E, ·)
    own = np.zeros(len(exported))
    for slot, exp in enumerate(exported):
        if exp is None:
            reward = np.asarray(rec["ref"][slot], dtype=np.float64)
        else:
            t, e = rec["active"][slot].shape
            flat = [np.asarray(rec[k][slot]).reshape(t * e, -1) for k in ("obs", "actions", "next_obs")]
            reward = columns(exp, rows, *flat)[:, 0].reshape(t, e)
        own[slot] = (reward * rec["active"][slot]).sum(axis=0).mean()  # rows after an episode's done weigh 0
    return own


def record_rollouts_jax(program: Any, state: Any, slot_jobs: list[int], n_live: int, jobs: list[Any],
                        exported: list[Any], random_q: float, scale: float) -> dict[int, dict[str, np.ndarray]]:
    """The rollouts.npz arrays of the jobs of the first n_live slots (slot_jobs[s] = the job of slot s):
    {job index: {name: array}}."""
    import jax

    n = jobs[0].collect_episodes
    seeds = np.asarray([[ROLLOUT_SEED_BASE + 1000 * jobs[i].seed + k for k in range(n)] for i in slot_jobs])
    keys = jax.vmap(jax.vmap(jax.random.PRNGKey))(seeds)
    rec = jax.device_get(_recorder(program)(state, keys))
    out = {}
    for slot, i in enumerate(slot_jobs[:n_live]):
        active = rec["active"][slot] > 0  # (T, E)
        order = [(t, e) for e in range(n) for t in range(active.shape[0]) if active[t, e]]  # episode-major
        t_idx, e_idx = (np.asarray(x) for x in zip(*order, strict=True))
        data = {k: np.asarray(rec[k][slot][t_idx, e_idx], dtype=np.float64) for k in ("obs", "actions", "next_obs")}
        data["episode"] = e_idx
        if exported[slot] is None:
            data["reward"] = np.asarray(rec["ref"][slot][t_idx, e_idx], dtype=np.float64)
        else:
            cols = columns(exported[slot], jobs[i].program.rows, *(data[k] for k in ("obs", "actions", "next_obs")))
            data["reward"] = cols[:, 0].astype(np.float64)
            data.update({f"comp/{c}": cols[:, j + 1].astype(np.float64)
                         for j, c in enumerate(jobs[i].program.components)})
        q = np.asarray(rec["quantity"][slot], dtype=np.float64)
        data.update(score=(q - random_q) / scale, quantity=q, length=np.bincount(e_idx, minlength=n))
        out[i] = data
    return out
