"""Deterministic episodes of a trained policy, labelled with its own reward (the trajectory store's input)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bird.envs.base import TaskAdapter, eval_env
from bird.files import atomic_writer
from bird.learners.job import ROLLOUT_SEED_BASE

__all__ = ["collect_rollouts", "save_rollouts", "load_rollouts", "ROLLOUT_SEED_BASE"]

_BATCH = 8  # episodes run side by side


def _run_batch(adapter: TaskAdapter, act: Callable[[np.ndarray], np.ndarray], seeds: list[int],
               end_on_success: bool) -> list[dict]:
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: eval_env(adapter, end_on_success) for _ in seeds])
    venv.seed(seeds[0])
    obs = venv.reset()
    n = len(seeds)
    eps: list[dict[str, Any]] = [{"obs": [], "actions": [], "next_obs": [], "ref": []} for _ in range(n)]
    done = np.zeros(n, dtype=bool)
    while not done.all():
        actions = act(obs)
        nxt, rewards, dones, infos = venv.step(actions)
        for i in np.flatnonzero(~done):
            true_next = infos[i].get("terminal_observation", nxt[i]) if dones[i] else nxt[i]
            for key, value in (("obs", obs[i]), ("actions", actions[i]), ("next_obs", true_next), ("ref", rewards[i])):
                eps[i][key].append(np.asarray(value, dtype=np.float64))
            if dones[i]:
                eps[i]["score"] = float(infos[i]["bird_episode"]["score"])
                eps[i]["quantity"] = float(infos[i]["bird_episode"]["quantity"])
        done |= dones
        obs = nxt
    venv.close()
    return eps


def collect_rollouts(adapter: TaskAdapter, act: Callable[[np.ndarray], np.ndarray], n: int, seed: int,
                     reward: Any = None, end_on_success: bool = False) -> dict[str, np.ndarray]:
    """n episodes (reset seeds ROLLOUT_SEED_BASE + 1000*seed + k), flattened episode-major; with end_on_success an
    episode ends at its first successful step.

    Returns obs/actions/next_obs (N, ·), episode (N,), reward (N,) under `reward` (the sandboxed program; None =
    the reference reward, for an oracle), comp/<name> (N,), and per episode: score, quantity, length (n,).
    """
    seeds = [ROLLOUT_SEED_BASE + 1000 * seed + k for k in range(n)]
    eps = [e for i in range(0, n, _BATCH) for e in _run_batch(adapter, act, seeds[i : i + _BATCH], end_on_success)]
    lengths = np.array([len(e["obs"]) for e in eps])
    out: dict[str, np.ndarray] = {k: np.concatenate([np.stack(e[k]) for e in eps]) for k in ("obs", "actions", "next_obs")}
    out["episode"] = np.repeat(np.arange(n), lengths)
    dones = np.zeros(len(out["episode"]), dtype=bool)
    dones[np.cumsum(lengths) - 1] = True
    if reward is None:
        out["reward"] = np.concatenate([np.asarray(e["ref"]) for e in eps])
    else:
        own, comps = reward(out["obs"], out["actions"], out["next_obs"], dones=dones, n_envs=1, reset=True)
        out["reward"] = own
        out.update({f"comp/{k}": v for k, v in comps.items()})
    out["score"] = np.array([e["score"] for e in eps])
    out["quantity"] = np.array([e["quantity"] for e in eps])
    out["length"] = lengths
    return out


def save_rollouts(path: str | Path, data: dict[str, np.ndarray]) -> None:
    with atomic_writer(Path(path)) as fh:
        np.savez_compressed(fh, **{k: (v.astype(np.float32) if v.dtype == np.float64 and v.ndim == 2 else v)
                                   for k, v in data.items()})


def load_rollouts(path: str | Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}
