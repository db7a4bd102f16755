"""Competent-policy transition datasets for EPIC, cached on disk (docs/analysis.md, "EPIC in the benchmark").

Gym MuJoCo: a PPO policy trained on the task's reference reward (`train_ppo`, `code=None`), rolled out with its
VecNormalize statistics, sampling from the policy's action distribution. States are dicts of named arrays:
"obs" plus the task's extra simulator fields (`bird.envs.mujoco.reference.EXTRA_FIELDS`).
Cache: $BIRD_CACHE_DIR/epic (default ~/.cache/bird/epic)/<suite>__<task>/ppo_steps<N>_seed<S>/, written atomically
and read back as bird/files.py reads a file someone else may have written (a cache can be shared).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bird.files import atomic_writer, load_npz, loads, read_json, write_json

__all__ = ["Dataset", "cache_dir", "competent_dataset", "rollout", "train_reference_policy"]

Policy = Callable[[np.ndarray], np.ndarray]
State = dict[str, np.ndarray]


@dataclass
class Dataset:
    """N_V Pearson transitions (whole episodes, in order) and N_M paired canonicalisation samples."""

    obs: State
    acts: np.ndarray
    next_obs: State
    mean_obs: State
    mean_acts: np.ndarray
    env_reward: np.ndarray  # (N_V,) the env's own reward of each transition (for checks)
    episode: np.ndarray  # (N_V,) episode index
    meta: dict[str, Any] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        arrays = {f"{g}/{k}": v for g in ("obs", "next_obs", "mean_obs") for k, v in getattr(self, g).items()}
        arrays.update(acts=self.acts, mean_acts=self.mean_acts, env_reward=self.env_reward, episode=self.episode)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(path) as fh:
            np.savez_compressed(fh, meta=json.dumps(self.meta), **arrays)

    @classmethod
    def load(cls, path: Path) -> Dataset:
        z = load_npz(path, "arrays")
        groups: dict[str, State] = {"obs": {}, "next_obs": {}, "mean_obs": {}}
        for key, value in z.items():
            g, _, k = key.partition("/")
            if g in groups:
                groups[g][k] = value
        return cls(groups["obs"], z["acts"], groups["next_obs"], groups["mean_obs"], z["mean_acts"],
                   z["env_reward"], z["episode"], loads(str(z["meta"])))


def cache_dir() -> Path:
    """$BIRD_CACHE_DIR/epic, else ~/.cache/bird/epic."""
    root = os.environ.get("BIRD_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "bird") / "epic"


def rollout(env_id: str, policy: Policy | None, n_steps: int, seed: int) -> Dataset:
    """Whole episodes (reset seeds seed*1000 + k) until n_steps transitions; policy None = uniform random.

    Returns a Dataset without mean samples (empty), with extended states and the env's reward per step.
    """
    from bird.envs.demos import env_config
    from bird.envs.mujoco.reference import extra_state
    from bird.envs.registry import make_adapter

    adapter = make_adapter(env_config(env_id))
    task = adapter.spec.task
    env = adapter.make_env(seed=seed)
    low, high = env.action_space.low, env.action_space.high
    rows: dict[str, list] = {"obs": [], "ext": [], "acts": [], "next_obs": [], "next_ext": [], "r": [], "ep": []}
    ep = 0
    while len(rows["r"]) < n_steps:
        obs, _ = env.reset(seed=seed * 1000 + ep)
        env.action_space.seed(seed * 1000 + ep)
        ext = extra_state(task, env)
        done = False
        while not done and len(rows["r"]) < n_steps:
            act = env.action_space.sample() if policy is None else np.clip(policy(obs), low, high)
            nxt, r, term, trunc, _ = env.step(act)
            nxt_ext = extra_state(task, env)
            for k, v in zip(rows, (obs, ext, act, nxt, nxt_ext, float(r), ep), strict=True):
                rows[k].append(v)
            obs, ext, done = nxt, nxt_ext, term or trunc
        ep += 1
    env.close()

    def state(o: str, e: str) -> State:
        return {"obs": np.asarray(rows[o], dtype=np.float64),
                **{k: np.stack([x[k] for x in rows[e]]).astype(np.float64) for k in rows[e][0]}}

    empty: State = {}
    return Dataset(state("obs", "ext"), np.asarray(rows["acts"], dtype=np.float64), state("next_obs", "next_ext"),
                   empty, np.empty((0,)), np.asarray(rows["r"]), np.asarray(rows["ep"]),
                   {"env_id": env_id, "episodes": ep, "seed": seed})


def train_reference_policy(env_id: str, steps: int, seed: int, out_dir: Path) -> dict[str, Any]:
    """PPO on the reference reward (bird's tuned PPO, conf/trainer/sb3_tuned.yaml); writes policy.npz (no pickle,
    bird/learners/sb3_policy.py) and policy.json."""
    from omegaconf import OmegaConf

    from bird.config.load import CONF_DIR
    from bird.config.schema import TrainConfig
    from bird.envs.demos import env_config
    from bird.learners.job import TrainJob
    from bird.learners.sb3_ppo import train_ppo

    train = TrainConfig(**OmegaConf.to_container(OmegaConf.load(CONF_DIR / "trainer" / "sb3_tuned.yaml")))
    job = TrainJob(candidate_id="reference", code=None, env=env_config(env_id), train=train, seed=seed,
                   env_steps=steps, n_envs=4, n_checkpoints=1, eval_episodes=4, call_timeout_s=5.0,
                   memory_mb=2048, out_dir=str(out_dir), save_policy=True)
    res = train_ppo(job)
    if res.failure is not None or res.policy_path is None:
        raise RuntimeError(f"reference-policy training failed for {env_id}: {res.failure}")
    last = res.curve[-1]
    info = {"env_id": env_id, "steps": res.env_steps, "seed": seed, "score": last.score,
            "quantity": last.quantity, "episode_length": last.episode_length, "wall_s": res.wall_s}
    write_json(out_dir / "policy.json", info)
    return info


def _load_policy(policy_dir: Path, seed: int) -> Policy:
    import torch

    from bird.learners.sb3_policy import POLICY_NAME, load_policy

    batch = load_policy(policy_dir / POLICY_NAME, deterministic=False)
    torch.manual_seed(seed)

    def act(obs: np.ndarray) -> np.ndarray:
        return batch(obs[None])[0]

    return act


def _mean_samples(ds: Dataset, n_mean: int, rng: np.random.Generator) -> tuple[State, np.ndarray]:
    """D_S and D_A marginals: states from obs + next_obs, actions from acts, drawn independently, N_M each."""
    pooled = {k: np.concatenate([ds.obs[k], ds.next_obs[k]]) for k in ds.obs}
    si = rng.choice(len(pooled["obs"]), size=n_mean, replace=False)
    ai = rng.choice(len(ds.acts), size=n_mean, replace=len(ds.acts) < n_mean)
    return {k: v[si] for k, v in pooled.items()}, ds.acts[ai]


def competent_dataset(env_id: str, policy_steps: int, n_transitions: int, n_mean: int, seed: int = 0,
                      log: Callable[[str], None] = print) -> Dataset:
    """The cached competent-policy dataset of a Gym MuJoCo task (trained and rolled out when missing)."""
    root = cache_dir() / env_id.replace("/", "__") / f"ppo_steps{policy_steps}_seed{seed}"
    path = root / f"transitions_v{n_transitions}_m{n_mean}.npz"
    if path.is_file():
        return Dataset.load(path)
    if not (root / "policy.npz").is_file():
        log(f"[epic] training the reference policy for {env_id}: PPO, {policy_steps} steps, seed {seed}")
        train_reference_policy(env_id, policy_steps, seed, root)
    policy = _load_policy(root, seed)
    ds = rollout(env_id, policy, n_transitions, seed=10_000 + seed)
    pool = rollout(env_id, policy, max(n_mean, 1), seed=20_000 + seed)  # fresh episodes for D_S, D_A
    ds.mean_obs, ds.mean_acts = _mean_samples(pool, n_mean, np.random.default_rng(seed))
    info = read_json(root / "policy.json", "record")
    ds.meta.update(policy=info, policy_steps=policy_steps, n_transitions=n_transitions, n_mean=n_mean,
                   mean_episodes=pool.meta["episodes"], deterministic=False)
    ds.save(path)
    return ds
