"""Benchmark evaluation of a policy: one episode per eval env, fixed seeds, deterministic actions."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv

from bird.envs.base import TaskAdapter, eval_env
from bird.learners.job import EVAL_SEED_BASE
from bird.learners.relabel import TransitionRecorder

__all__ = ["Evaluator"]

# label(data) -> own reward (T, n_envs) of a recorded block (bird/learners/relabel.py::label_transitions)
Labeller = Callable[[dict[str, np.ndarray]], np.ndarray]


class Evaluator:
    """Runs `episodes` episodes in parallel and averages the benchmark score, quantity, length and the return of the
    env's shipped (reference) reward; with a labeller, also the candidate's own-reward return on those greedy episodes
    (`own_return`)."""

    def __init__(self, adapter: TaskAdapter, episodes: int, seed: int, end_on_success: bool = False) -> None:
        self.episodes = episodes
        self.venv = DummyVecEnv([lambda: eval_env(adapter, end_on_success) for _ in range(episodes)])
        self.recorder = TransitionRecorder(self.venv)
        self.seeds = [EVAL_SEED_BASE + 1000 * seed + k for k in range(episodes)]

    def __call__(self, act: Callable[[np.ndarray], np.ndarray], label: Labeller | None = None) -> dict[str, float]:
        """`act(obs_batch) -> actions` must be deterministic; returns means over episodes."""
        self.venv.seed(self.seeds[0])  # env k is reset with seed seeds[0] + k
        stepper = self.recorder if label is not None else self.venv  # record transitions only to label them
        obs = stepper.reset()
        self.recorder.clear()
        done = np.zeros(self.episodes, dtype=bool)
        scores = np.zeros(self.episodes)
        quantities = np.zeros(self.episodes)
        lengths = np.zeros(self.episodes)
        reference = np.zeros(self.episodes)
        while not done.all():
            obs, rewards, dones, infos = stepper.step(act(obs))
            lengths += ~done
            reference += np.where(done, 0.0, rewards)
            for i in np.flatnonzero(dones & ~done):
                ep = infos[i]["bird_episode"]
                scores[i], quantities[i] = ep["score"], ep["quantity"]
            done |= dones
        out = {"score": float(scores.mean()), "quantity": float(quantities.mean()), "episode_length": float(lengths.mean()),
               "reference_return": float(reference.mean())}
        if label is not None:
            data = self.recorder.take()
            own = label(data)  # (T, n): rows after an env's first done belong to the next episode and are dropped
            first_done = np.argmax(data["dones"], axis=0)
            keep = np.arange(len(own))[:, None] <= first_done[None, :]
            out["own_return"] = float((own * keep).sum(axis=0).mean())
        return out

    def close(self) -> None:
        self.venv.close()
