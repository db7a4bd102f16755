"""Gym MuJoCo v5 reference rewards as functions of stored transitions (for EPIC; docs/analysis.md).

A stored state is a dict of named arrays: ``"obs"`` (N, D), the task's default observation, plus the *extra*
simulator quantities its v5 reward needs and the observation leaves out (``EXTRA_FIELDS``):

| task | extra fields | why |
|---|---|---|
| half_cheetah | ``x_position`` (1) | forward reward = (x' - x) / dt; x = qpos[0] is excluded from the observation |
| hopper | ``x_position`` (1), ``qvel`` (6) | forward reward as above; the healthy check reads the *unclipped* qvel |
| swimmer | ``x_position`` (1) | forward reward as above |
| inverted_pendulum | none | reward = 1[next obs finite and abs(hinge angle) <= 0.2] |
| reacher | ``fingertip_minus_target`` (3) | v5 uses the 3-D body-COM distance after the step; obs has only x, y |

Each function is ``f(obs, acts, next_obs) -> (N,)`` with the default v5 weights (read from gymnasium 1.4's
``*_v5.py``; note Reacher's ``reward_control_weight`` defaults to 1 in code although its docstring says 0.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import numpy as np

from bird.envs.mujoco.tasks import TASKS

__all__ = ["EXTRA_FIELDS", "extra_state", "reference_reward", "state_dict"]

State = Mapping[str, np.ndarray]
RewardFn = Callable[[State, np.ndarray, State], np.ndarray]

EXTRA_FIELDS: dict[str, dict[str, int]] = {
    "half_cheetah": {"x_position": 1},
    "hopper": {"x_position": 1, "qvel": 6},
    "swimmer": {"x_position": 1},
    "inverted_pendulum": {},
    "reacher": {"fingertip_minus_target": 3},
}


def extra_state(task: str, env: Any) -> dict[str, np.ndarray]:
    """The extra fields of the current simulator state of `env` (any wrapper of a v5 env), each (size,)."""
    u = env.unwrapped
    out: dict[str, np.ndarray] = {}
    for name in EXTRA_FIELDS[task]:
        if name == "x_position":
            out[name] = np.array([u.data.qpos[0]], dtype=np.float64)
        elif name == "qvel":
            out[name] = np.array(u.data.qvel, dtype=np.float64)
        elif name == "fingertip_minus_target":
            out[name] = np.asarray(u.get_body_com("fingertip") - u.get_body_com("target"), dtype=np.float64)
    return out


def state_dict(task: str, obs: np.ndarray, extras: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Stack into a stored state {"obs": (N, D), extra: (N, size)}; checks every extra field is present."""
    missing = set(EXTRA_FIELDS[task]) - set(extras)
    if missing:
        raise ValueError(f"{task}: missing extra state fields {sorted(missing)}")
    return {"obs": np.asarray(obs, dtype=np.float64), **{k: np.asarray(extras[k], dtype=np.float64)
                                                          for k in EXTRA_FIELDS[task]}}


@cache
def _dt(task: str) -> float:
    import gymnasium as gym

    env = gym.make(TASKS[task].gym_id)
    try:
        return float(env.unwrapped.dt)
    finally:
        env.close()


def _ctrl(acts: np.ndarray, weight: float) -> np.ndarray:
    a = np.asarray(acts, dtype=np.float64)
    return weight * np.sum(np.square(a.reshape(len(a), -1)), axis=1)


def _forward(s: State, s2: State, dt: float) -> np.ndarray:
    return (np.asarray(s2["x_position"])[:, 0] - np.asarray(s["x_position"])[:, 0]) / dt


def _half_cheetah(s: State, a: np.ndarray, s2: State) -> np.ndarray:
    return 1.0 * _forward(s, s2, _dt("half_cheetah")) - _ctrl(a, 0.1)


def _swimmer(s: State, a: np.ndarray, s2: State) -> np.ndarray:
    return 1.0 * _forward(s, s2, _dt("swimmer")) - _ctrl(a, 1e-4)


def _hopper(s: State, a: np.ndarray, s2: State) -> np.ndarray:
    obs2 = np.asarray(s2["obs"])
    z, angle = obs2[:, 0], obs2[:, 1]  # obs = qpos[1:] (z, angle, 3 joints) + clip(qvel, -10, 10)
    state = np.concatenate([obs2[:, 1:5], np.asarray(s2["qvel"])], axis=1)  # state_vector()[2:]
    healthy = (np.all((state > -100.0) & (state < 100.0), axis=1) & (z > 0.7) & (z < np.inf)
               & (angle > -0.2) & (angle < 0.2))
    return (1.0 * _forward(s, s2, _dt("hopper")) + healthy * 1.0) - _ctrl(a, 1e-3)


def _inverted_pendulum(s: State, a: np.ndarray, s2: State) -> np.ndarray:
    obs2 = np.asarray(s2["obs"])
    terminated = ~np.all(np.isfinite(obs2), axis=1) | (np.abs(obs2[:, 1]) > 0.2)
    return (~terminated).astype(np.float64)


def _reacher(s: State, a: np.ndarray, s2: State) -> np.ndarray:
    dist = np.linalg.norm(np.asarray(s2["fingertip_minus_target"]), axis=1)
    return -dist * 1.0 - _ctrl(a, 1.0)


_REWARDS: dict[str, RewardFn] = {
    "half_cheetah": _half_cheetah, "hopper": _hopper, "swimmer": _swimmer,
    "inverted_pendulum": _inverted_pendulum, "reacher": _reacher,
}


def reference_reward(task: str) -> RewardFn:
    """The v5 reward of `task` as f(obs, acts, next_obs) -> (N,) on stored states (see the module docstring)."""
    if task not in _REWARDS:
        raise ValueError(f"no reference reward for mujoco task {task!r}; available: {sorted(_REWARDS)}")
    return _REWARDS[task]
