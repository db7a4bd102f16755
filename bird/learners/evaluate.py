"""Benchmark evaluation of a policy: one episode per eval env, fixed seeds, deterministic actions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

from bird.envs.base import TaskAdapter, eval_env

__all__ = ["Evaluator"]

EVAL_SEED_BASE = 1_000_000  # eval seeds are the same for every candidate and checkpoint (paired comparisons)


class Evaluator:
    """Runs `episodes` episodes in parallel and averages the benchmark score, quantity and length."""

    def __init__(self, adapter: TaskAdapter, episodes: int, seed: int, end_on_success: bool = False) -> None:
        self.episodes = episodes
        self.venv = DummyVecEnv([lambda: eval_env(adapter, end_on_success) for _ in range(episodes)])
        self.seeds = [EVAL_SEED_BASE + 1000 * seed + k for k in range(episodes)]

    def __call__(self, act: Callable[[np.ndarray], np.ndarray]) -> dict[str, float]:
        """`act(obs_batch) -> actions` must be deterministic; returns means over episodes."""
        self.venv.seed(self.seeds[0])  # env k is reset with seed seeds[0] + k
        obs = self.venv.reset()
        done = np.zeros(self.episodes, dtype=bool)
        scores = np.zeros(self.episodes)
        quantities = np.zeros(self.episodes)
        lengths = np.zeros(self.episodes)
        while not done.all():
            obs, _, dones, infos = self.venv.step(act(obs))
            lengths += ~done
            for i in np.flatnonzero(dones & ~done):
                ep = infos[i]["bird_episode"]
                scores[i], quantities[i] = ep["score"], ep["quantity"]
            done |= dones
        return {"score": float(scores.mean()), "quantity": float(quantities.mean()), "episode_length": float(lengths.mean())}

    def close(self) -> None:
        self.venv.close()
