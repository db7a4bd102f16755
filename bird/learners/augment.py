"""Observation augmentation in the learner: append the subtask prior E[Ψ(s)] to every observation the policy sees.

Ψ runs in the candidate's sandbox (one call per vector step); the reward program and the recorder keep seeing the
raw observation, since the wrapper sits outside the TransitionRecorder."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

from bird.reward.sandbox import SandboxedReward

__all__ = ["SubtaskPrior", "PriorWrapper"]


class SubtaskPrior:
    """obs (B, D) -> (B, D + dim): the encoder row of Ψ(obs) appended."""

    def __init__(self, program: SandboxedReward, table: np.ndarray) -> None:
        self.program, self.table = program, np.asarray(table, dtype=np.float32)

    @property
    def dim(self) -> int:
        return int(self.table.shape[1])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float64)
        _, comps = self.program(obs, np.zeros((len(obs), 1)), obs)
        k = comps["subtask"].astype(int)
        return np.concatenate([obs, self.table[k]], axis=1).astype(np.float32)


class PriorWrapper(VecEnvWrapper):
    """Applies a SubtaskPrior to reset and step observations (and to terminal observations in infos)."""

    def __init__(self, venv: VecEnv, prior: SubtaskPrior) -> None:
        low = np.concatenate([venv.observation_space.low, np.zeros(prior.dim)]).astype(np.float32)
        high = np.concatenate([venv.observation_space.high, np.ones(prior.dim)]).astype(np.float32)
        super().__init__(venv, observation_space=spaces.Box(low, high, dtype=np.float32))
        self.prior = prior

    def reset(self) -> np.ndarray:
        return self.prior(self.venv.reset())

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        for i, done in enumerate(dones):
            if done and "terminal_observation" in infos[i]:
                infos[i] = {**infos[i], "terminal_observation": self.prior(infos[i]["terminal_observation"][None])[0]}
        return self.prior(obs), rewards, dones, infos
