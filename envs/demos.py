"""Expert and uniform-random demonstrations, cached on disk as .npz (keyed by task, kind, expert, count and seed).

Expert = the task's scripted policy (Meta-World ships one per task), or another policy handed in as an `ExpertSource`
(a trained PPO expert: bird/learners/expert.py). The reference reward is stored for analysis only: `load_demos`
leaves it out unless asked, so a generator never sees it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from bird.config.schema import EnvConfig
from bird.envs.gym.taskfile import read_env_file, typed_env

__all__ = [
    "Demos", "ExpertSource", "available_envs", "cache_dir", "demo_path", "env_config", "generate_demos", "load_demos",
    "record_episode",
]

KINDS = ("expert", "random")
Policy = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ExpertSource:
    """An expert policy other than the task's scripted one.

    :param name: its cache-key part (file-name characters only), e.g. "ppo-steps2048-seed0".
    :param policy: obs -> action, one observation at a time.
    :param description: what it is, recorded in the demos file and shown in result.json.
    """

    name: str
    policy: Policy
    description: str


@dataclass(frozen=True)
class Demos:
    """n episodes of up to T steps. obs/next_obs: (n, T, obs_dim) float32; action: (n, T, act_dim); success: (n, T).
    An episode that ended before T (a fall) is padded with copies of its last transition; `length` says where."""

    env_id: str
    kind: str
    seed: int
    episode_seeds: np.ndarray  # (n,) the reset seed of each episode
    obs: np.ndarray
    action: np.ndarray
    next_obs: np.ndarray
    success: np.ndarray  # Meta-World's success flag per step (bool)
    reference_reward: np.ndarray | None = None  # (n, T); analysis only, never shown to a generator
    length: np.ndarray | None = None  # (n,) steps of each episode; None: every episode has T

    @property
    def valid(self) -> np.ndarray:
        """(n, T) True on an episode's own steps, False on its padding."""
        steps = np.arange(self.obs.shape[1])
        return steps[None, :] < (self.length if self.length is not None else np.full(self.n, len(steps)))[:, None]

    @property
    def n(self) -> int:
        return int(self.obs.shape[0])

    @property
    def success_rate(self) -> float:
        """Fraction of episodes with the success flag set on at least one step."""
        return float(self.success.any(axis=1).mean())


def cache_dir() -> Path:
    """$BIRD_CACHE_DIR/demos, else ~/.cache/bird/demos."""
    root = os.environ.get("BIRD_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "bird") / "demos"


def available_envs(suite: str = "*") -> list[str]:
    """Canonical env ids with an option file under conf/env/ (hyphenated aliases left out)."""
    from bird.config.load import CONF_DIR

    paths = (CONF_DIR / "env").glob(f"{suite}/*.yaml")
    return sorted(f"{p.parent.name}/{p.stem}" for p in paths if "-" not in p.stem)


def env_config(env_id: str, trust: bool = False) -> EnvConfig:
    """EnvConfig from the option env/<suite>/<task>.yaml on the config search path (bird's conf/ first, then
    BIRD_CONFIG_PATH; hyphens in the task name read as underscores), or from the env option file (a task file) at the
    path `env_id` when it ends in .yaml. A file elsewhere than on the search path is received: read as data, and its
    task may name code or files only under `trust` (bird/config/received_task.py; a ConfigError otherwise)."""
    from bird.config.received import load_received
    from bird.config.received_task import check_received_task, on_search_path
    from bird.config.searchpath import find

    if env_id.endswith((".yaml", ".yml")):
        path = Path(env_id)
        if not path.is_file():
            raise ValueError(f"no task file {env_id!r}")
        if on_search_path(path):
            return read_env_file(path)
        data = load_received(path)
        check_received_task(data, trust=trust)
        return typed_env(data, str(path))
    suite, _, task = env_id.partition("/")
    path = find("env", f"{suite}/{task.replace('-', '_')}") if suite and task else None
    if path is None:
        raise ValueError(f"unknown env {env_id!r}; available: {available_envs(suite) or available_envs()}")
    return read_env_file(path)


def demo_path(env_id: str, n: int, seed: int, kind: str, expert: ExpertSource | None = None) -> Path:
    """Where the demos of `kind` (by `expert` when given, else the scripted one) are cached."""
    cfg = env_config(env_id)
    stem = f"{kind}-{expert.name}" if kind == "expert" and expert is not None else kind
    return cache_dir() / cfg.id.replace("/", "__") / f"{stem}_n{n}_seed{seed}.npz"


def record_episode(env: gym.Env, policy: Policy | None, seed: int) -> dict[str, Any]:
    """Run one episode from reset(seed=seed); policy None = uniform random (action space seeded with `seed`)."""
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    rows: dict[str, list] = {"obs": [], "action": [], "next_obs": [], "success": [], "reference_reward": []}
    while True:
        action = env.action_space.sample() if policy is None else policy(obs)
        next_obs, reward, terminated, truncated, info = env.step(action)
        step = (obs, action, next_obs, bool(info.get("success", 0.0)), float(reward))
        for key, value in zip(rows, step, strict=True):
            rows[key].append(value)
        obs = next_obs
        if terminated or truncated:
            out: dict[str, Any] = {k: np.asarray(v) for k, v in rows.items()}
            out["quantity"] = info["bird_episode"]["quantity"]
            return out


def _pad(rows: np.ndarray, steps: int, flag: bool) -> np.ndarray:
    """`rows` (t, ...) to `steps` rows: copies of the last row (False for a flag)."""
    if len(rows) == steps:
        return rows
    fill = np.zeros_like(rows[-1:]) if flag else rows[-1:]
    return np.concatenate([rows, np.repeat(fill, steps - len(rows), axis=0)])


def _policy(adapter: Any, env_id: str, kind: str, expert: ExpertSource | None) -> tuple[Policy | None, str]:
    """(policy, its description) of a demo kind: uniform random, the given expert, or the task's scripted one."""
    if kind == "random":
        return None, "uniform random over the action box"
    if expert is not None:
        return expert.policy, expert.description
    if not hasattr(adapter, "expert_policy"):
        raise ValueError(f"{env_id}: this task has no scripted expert policy (demos.expert=ppo trains one on its "
                         "reference reward: python -m bird.envs demos env=... expert=ppo)")
    return adapter.expert_policy(), "scripted expert"


def generate_demos(env_id: str, n: int, seed: int, kind: str = "expert", expert: ExpertSource | None = None) -> Path:
    """Roll out n episodes (reset seeds seed*1000 + i) and write them to demo_path(...)."""
    from bird.envs.registry import make_adapter

    if kind not in KINDS:
        raise ValueError(f"unknown demo kind {kind!r}; allowed: {list(KINDS)}")
    adapter = make_adapter(env_config(env_id))
    policy, described = _policy(adapter, env_id, kind, expert)
    env = adapter.make_env(seed=seed)
    seeds = [seed * 1000 + i for i in range(n)]
    episodes = [record_episode(env, policy, s) for s in seeds]
    env.close()
    length = np.asarray([len(e["action"]) for e in episodes])
    arrays = {k: np.stack([_pad(e[k], int(length.max()), k == "success") for e in episodes])
              for k in ("obs", "action", "next_obs", "success", "reference_reward")}
    for k in ("obs", "action", "next_obs", "reference_reward"):
        arrays[k] = arrays[k].astype(np.float32)
    source = f" expert={expert.name.split('-')[0]}" if kind == "expert" and expert is not None else ""
    meta = {
        "env_id": adapter.spec.env_id, "kind": kind, "n": n, "seed": seed, "policy": described,
        "command": f"python -m bird.envs demos env={env_id} n={n} seed={seed} kind={kind}{source}",
    }
    path = demo_path(env_id, n, seed, kind, expert)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, episode_seeds=np.asarray(seeds), length=length, meta=json.dumps(meta), **arrays)
    tmp.replace(path)
    return path


def load_demos(
    env_id: str, n: int, seed: int, kind: str = "expert", *, generate: bool = True, with_reference_reward: bool = False,
    expert: ExpertSource | None = None,
) -> Demos:
    """Demos from the cache, generated first when missing (generate=False raises FileNotFoundError instead).

    :param with_reference_reward: also load the env's reward (for analysis; never pass it to a generator).
    :param expert: the expert of kind="expert" when it is not the task's scripted one.
    """
    path = demo_path(env_id, n, seed, kind, expert)
    if not path.exists():
        if not generate:
            raise FileNotFoundError(f"no cached demos at {path}; run: python -m bird.envs demos env={env_id} n={n} "
                                    f"seed={seed} kind={kind}")
        generate_demos(env_id, n, seed, kind, expert)
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
        return Demos(
            env_id=meta["env_id"], kind=kind, seed=seed, episode_seeds=z["episode_seeds"],
            obs=z["obs"], action=z["action"], next_obs=z["next_obs"], success=z["success"],
            reference_reward=z["reference_reward"] if with_reference_reward else None,
            length=z["length"] if "length" in z.files else None,
        )
