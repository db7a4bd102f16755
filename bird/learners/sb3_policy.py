"""An SB3 PPO policy on disk without pickle: `policy.npz` holds its parameters, its spaces and its observation
statistics as plain arrays (read back with allow_pickle=False), where SB3's own `policy.zip` and VecNormalize's
`.pkl` are pickles that run code when loaded. It is written atomically and read as a bounded regular file
(bird/files.py): a received run's policy can be neither a link to a host file nor a memory bomb."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bird.files import atomic_writer, load_npz, loads

__all__ = ["POLICY_NAME", "save_policy", "load_policy", "saved_obs_dim"]

POLICY_NAME = "policy.npz"
Act = Callable[[np.ndarray], np.ndarray]


def save_policy(model: Any, vecnorm: Any, path: Path) -> None:
    """Write `model`'s policy (a PPO "MlpPolicy") and `vecnorm`'s observation statistics to `path`."""
    policy = model.policy
    meta = {"net_arch": policy.net_arch, "norm_obs": bool(vecnorm.norm_obs), "clip_obs": float(vecnorm.clip_obs),
            "epsilon": float(vecnorm.epsilon)}
    arrays = {f"params/{k}": v.detach().cpu().numpy() for k, v in policy.state_dict().items()}
    act = policy.action_space
    discrete = not hasattr(act, "low")  # a Discrete(n) action: its start and n, as the Box bounds' place holders
    arrays |= {"obs_rms/mean": vecnorm.obs_rms.mean, "obs_rms/var": vecnorm.obs_rms.var,
               "obs_rms/count": np.asarray(vecnorm.obs_rms.count, dtype=np.float64),
               "space/obs_low": policy.observation_space.low, "space/obs_high": policy.observation_space.high,
               "space/act_low": np.asarray([act.start]) if discrete else act.low,
               "space/act_high": np.asarray([act.start + act.n - 1]) if discrete else act.high,
               "meta": np.frombuffer(json.dumps({**meta, "discrete_actions": discrete}).encode(), dtype=np.uint8)}
    with atomic_writer(path) as fh:
        np.savez(fh, **arrays)


def load_policy(path: Path, deterministic: bool = False) -> Act:
    """`act(obs)` for a batch of raw observations (n, obs_dim): the saved policy on normalised observations.
    Raises OSError (not a regular file within its cap) or ValueError (not a policy.npz bird wrote)."""
    import gymnasium as gym
    import torch
    from stable_baselines3.common.policies import ActorCriticPolicy

    data = load_npz(path, "arrays")
    meta = loads(data["meta"].tobytes())
    obs_space = gym.spaces.Box(data["space/obs_low"], data["space/obs_high"], dtype=data["space/obs_low"].dtype)
    low, high = data["space/act_low"], data["space/act_high"]
    act_space = gym.spaces.Discrete(int(high[0] - low[0]) + 1, start=int(low[0])) if meta.get("discrete_actions") \
        else gym.spaces.Box(low, high, dtype=low.dtype)
    policy = ActorCriticPolicy(obs_space, act_space, lambda _: 0.0, net_arch=meta["net_arch"])
    policy.load_state_dict({k.removeprefix("params/"): torch.as_tensor(v) for k, v in data.items()
                            if k.startswith("params/")})
    policy.set_training_mode(False)
    mean, var = data["obs_rms/mean"], data["obs_rms/var"]

    def act(obs: np.ndarray) -> np.ndarray:
        if meta["norm_obs"]:
            obs = np.clip((obs - mean) / np.sqrt(var + meta["epsilon"]), -meta["clip_obs"], meta["clip_obs"])
        return policy.predict(obs.astype(np.float32), deterministic=deterministic)[0]

    return act


def saved_obs_dim(path: Path) -> int:
    """The size of the observation the saved policy acts on (the env's, plus a subtask prior's slots)."""
    with np.load(path, allow_pickle=False) as z:
        return int(z["space/obs_low"].shape[0])
