"""Reward relabelling: record each rollout's transitions, compute the candidate reward for the whole rollout in
one sandbox call, normalise it, and put it in the learner's buffer. One mechanism for every on-policy learner."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper

__all__ = ["TransitionRecorder", "ReturnNormalizer", "EpisodeStats", "RewardFn", "label_transitions"]

# reward_fn(obs (N, D), action (N, A), next_obs (N, D)) -> (reward (N,), {component: (N,)})
RewardFn = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, dict[str, np.ndarray]]]


class TransitionRecorder(VecEnvWrapper):
    """Passes steps through, but returns zero rewards and keeps (obs, action, next_obs, reference reward, done,
    terminal, success).

    `next_obs` is the true successor: the terminal observation for a step that ended an episode. `terminals` marks a
    done that is a true terminal state (not SB3's `TimeLimit.truncated`); `success` is the env's info["success"]
    at next_obs (False where the suite has none). Both stay harness-side: programs never see them.
    """

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self._last_obs: np.ndarray | None = None
        self._actions: np.ndarray | None = None
        self.clear()

    def clear(self) -> None:
        self.obs, self.actions, self.next_obs, self.ref_rewards, self.dones = [], [], [], [], []
        self.terminals: list[np.ndarray] = []
        self.success: list[np.ndarray] = []

    def reset(self) -> np.ndarray:
        self._last_obs = self.venv.reset()
        return self._last_obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)
        self.venv.step_async(actions)

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        dones = np.asarray(dones, dtype=bool)
        nxt, terminals = obs, np.zeros(len(dones), dtype=bool)
        if dones.any():  # DummyVecEnv returns a fresh obs array each step, so only a done needs a copy
            nxt = np.array(obs, copy=True)
            for i in np.flatnonzero(dones):
                if "terminal_observation" in infos[i]:
                    nxt[i] = infos[i]["terminal_observation"]
                terminals[i] = not infos[i].get("TimeLimit.truncated", False)
        self.obs.append(self._last_obs)
        self.actions.append(self._actions.reshape(len(dones), -1))
        self.next_obs.append(nxt)
        self.ref_rewards.append(np.asarray(rewards, dtype=np.float64))
        self.dones.append(dones)
        self.terminals.append(terminals)
        self.success.append(np.array([bool(info.get("success", False)) for info in infos]))
        self._last_obs = obs
        return obs, np.zeros_like(rewards), dones, infos

    def take(self) -> dict[str, np.ndarray]:
        """Stacked arrays of the steps since the last take: (T, n_envs, ...)."""
        out = {
            "obs": np.stack(self.obs),
            "actions": np.stack(self.actions),
            "next_obs": np.stack(self.next_obs),
            "ref_rewards": np.stack(self.ref_rewards),
            "dones": np.stack(self.dones),
            "terminals": np.stack(self.terminals),
            "success": np.stack(self.success),
        }
        self.clear()
        return out


def label_transitions(reward, data: dict[str, np.ndarray], reward_form: str, gamma: float, success_bonus: float,
                      reset: bool = False) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The training reward of a recorded block (TransitionRecorder.take()): the sandboxed program on every row in one
    call, then the harness-side reward form (bird/reward/shaping.py). Returns own (T, n_envs) and components (T*n,)."""
    from bird.registry import get
    from bird.reward.shaping import Transitions

    t, n = data["dones"].shape
    rows = t * n
    raw, comps = reward(data["obs"].reshape(rows, -1), data["actions"].reshape(rows, -1),
                        data["next_obs"].reshape(rows, -1), dones=data["dones"].reshape(rows), n_envs=n, reset=reset)
    tr = Transitions(data["ref_rewards"].reshape(rows), data["terminals"].reshape(rows), data["success"].reshape(rows),
                     gamma, success_bonus)
    shaped, comps = get("reward_form", reward_form)(raw, comps, tr)
    return shaped.reshape(t, n), comps


class ReturnNormalizer:
    """VecNormalize's reward scaling (divide by the running std of the discounted return), over a (T, n_envs) block."""

    def __init__(self, n_envs: int, gamma: float, clip: float = 10.0, eps: float = 1e-8) -> None:
        self.gamma, self.clip, self.eps = gamma, clip, eps
        self.ret = np.zeros(n_envs)
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def _update(self, x: np.ndarray) -> None:
        batch_mean, batch_var, n = float(x.mean()), float(x.var()), x.size
        delta, tot = batch_mean - self.mean, self.count + n
        self.mean += delta * n / tot
        m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / tot
        self.var, self.count = m2 / tot, tot

    def __call__(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        out = np.empty_like(rewards)
        for t in range(len(rewards)):
            self.ret = self.ret * self.gamma + rewards[t]
            self._update(self.ret)
            out[t] = np.clip(rewards[t] / np.sqrt(self.var + self.eps), -self.clip, self.clip)
            self.ret[dones[t]] = 0.0
        return out


class EpisodeStats:
    """Per-episode sums of own reward, reference reward and components across rollouts."""

    def __init__(self, n_envs: int) -> None:
        self.n_envs = n_envs
        self._own = np.zeros(n_envs)
        self._ref = np.zeros(n_envs)
        self._len = np.zeros(n_envs)
        self.finished: list[tuple[float, float, float]] = []  # (own, reference, length)
        self.component_sums: dict[str, float] = {}
        self.steps = 0

    def add(self, own: np.ndarray, ref: np.ndarray, dones: np.ndarray, comps: dict[str, np.ndarray]) -> None:
        for t in range(len(own)):
            self._own += own[t]
            self._ref += ref[t]
            self._len += 1
            for i in np.flatnonzero(dones[t]):
                self.finished.append((float(self._own[i]), float(self._ref[i]), float(self._len[i])))
                self._own[i] = self._ref[i] = self._len[i] = 0.0
        for name, values in comps.items():
            self.component_sums[name] = self.component_sums.get(name, 0.0) + float(values.sum())
        self.steps += own.size

    def summary(self) -> dict[str, float | dict[str, float]]:
        """Means since the last summary; NaN when no episode finished in the window."""
        eps = np.array(self.finished) if self.finished else np.full((1, 3), np.nan)
        comps = {k: v / max(self.steps, 1) for k, v in self.component_sums.items()}
        out = {"own_return": float(eps[:, 0].mean()), "reference_return": float(eps[:, 1].mean()), "components": comps}
        self.finished, self.component_sums, self.steps = [], {}, 0
        return out
