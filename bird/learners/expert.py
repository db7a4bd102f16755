"""A PPO expert for expert demonstrations where a task has no scripted one (demos.expert=ppo): the sb3_ppo learner
trained on the task's reference reward, cached with its training record as plain files (policy.npz, record.json,
curve.csv: no pickle) under $BIRD_CACHE_DIR/experts/<env>/ppo-steps<N>-seed<S>-<task hash>/ (the hash of the env
config but its text: horizon, task file), then served as an ExpertSource."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from bird.config.schema import EnvConfig, TrainConfig
from bird.envs.demos import ExpertSource, cache_dir
from bird.files import read_json, write_json
from bird.learners.job import TrainJob
from bird.learners.sb3_policy import POLICY_NAME, load_policy
from bird.types import TrainResult

__all__ = ["expert_dir", "expert_job", "load_expert", "ppo_expert", "RECORD_NAME"]

RECORD_NAME = "record.json"
Runner = Callable[[TrainJob], TrainResult]
_VERSIONS = ("gymnasium", "mujoco", "stable-baselines3", "torch")
_PPO_KEYS = ("learning_rate", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "ent_coef", "clip_range",
             "net_arch", "normalize_obs", "normalize_reward", "checkpoint_selection")


def _name(env: EnvConfig, steps: int, seed: int) -> str:
    """ppo-steps<N>-seed<S>-<hash of the env config without its description>."""
    task = json.dumps({k: v for k, v in asdict(env).items() if k != "description"}, sort_keys=True, default=str)
    return f"ppo-steps{steps}-seed{seed}-{hashlib.sha256(task.encode()).hexdigest()[:10]}"


def expert_dir(env: EnvConfig, steps: int, seed: int) -> Path:
    """Where the PPO expert of `env` trained `steps` env steps from `seed` is cached."""
    return cache_dir().parent / "experts" / env.id.replace("/", "__") / _name(env, steps, seed)


def expert_job(env: EnvConfig, steps: int, seed: int, out_dir: Path) -> TrainJob:
    """The training of the expert: bird's default SB3 PPO settings on the reference reward (code None), its policy
    saved; 4 envs, up to 4 evaluations of 4 episodes along the way."""
    return TrainJob(candidate_id="ppo-expert", code=None, env=env, train=TrainConfig(), seed=seed, env_steps=steps,
                    n_envs=4, n_checkpoints=max(1, min(4, steps // 2048)), eval_episodes=4, call_timeout_s=30.0,
                    memory_mb=2048, out_dir=str(out_dir), save_policy=True)


def _versions() -> dict[str, str]:
    out = {}
    for name in _VERSIONS:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def _record(job: TrainJob, result: TrainResult, wall_s: float) -> dict[str, Any]:
    """What the expert is and how it trained: the task, the learner and its settings, the curve, versions, date."""
    curve = [{"env_steps": c.env_steps, "score": c.score, "quantity": c.quantity, "reference_return": c.reference_return,
              "episode_length": c.episode_length} for c in result.curve]
    return {"env_id": job.env.id, "kind": "ppo", "reward": "the task's reference reward", "learner": "sb3_ppo",
            "horizon": job.env.horizon, "env_steps": job.env_steps, "seed": job.seed, "n_envs": job.n_envs,
            "ppo": {k: v for k, v in asdict(job.train).items() if k in _PPO_KEYS},
            "curve": curve, "shipped_checkpoint": result.shipped, "wall_s": round(wall_s, 1),
            "versions": _versions(), "made": dt.date.today().isoformat(),
            "command": f"python -m bird.envs demos env={job.env.id} expert=ppo steps={job.env_steps} "
                       f"expert_seed={job.seed}"}


def load_expert(folder: Path, env_id: str, steps: int) -> tuple[Callable[[np.ndarray], np.ndarray], dict[str, Any]]:
    """(policy obs -> action, training record) of a cached expert; a ValueError naming the folder when its record does
    not describe this task and budget or its files cannot be read."""
    try:
        record = read_json(folder / RECORD_NAME, "record")
        act = load_policy(folder / POLICY_NAME, deterministic=True)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ValueError(f"the cached PPO expert {folder} cannot be read ({type(exc).__name__}: {exc}); remove the "
                         "folder to train it again") from None
    if not isinstance(record, dict) or record.get("env_id") != env_id or record.get("env_steps") != steps:
        raise ValueError(f"the cached PPO expert {folder} is not {env_id} at {steps} steps; remove the folder to train "
                         "it again")
    return (lambda obs: act(np.asarray(obs, dtype=np.float64)[None])[0]), record


def _train(env: EnvConfig, steps: int, seed: int, run: Runner, folder: Path) -> None:
    """Train into a fresh folder beside `folder`, then rename it into place (a racing search keeps the first)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        job = expert_job(env, steps, seed, tmp)
        start = time.monotonic()
        result = run(job)
        if result.failure is not None or not (tmp / POLICY_NAME).exists():
            raise RuntimeError(f"training the PPO expert of {env.id} failed: {result.failure}")
        write_json(tmp / RECORD_NAME, _record(job, result, time.monotonic() - start))
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / RECORD_NAME).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ppo_expert(env: EnvConfig, steps: int, seed: int, run: Runner) -> ExpertSource:
    """The PPO expert of `env` at `steps` env steps from `seed`: from the cache, else trained with `run` (the sb3_ppo
    learner, in this process or a worker) and cached with its training record."""
    folder = expert_dir(env, steps, seed)
    if not (folder / RECORD_NAME).exists():
        _train(env, steps, seed, run, folder)
    policy, record = load_expert(folder, env.id, steps)
    last = record["curve"][-1] if record.get("curve") else {}
    described = (f"a PPO expert trained {steps:,} env steps on the task's reference reward (sb3_ppo, seed {seed}; "
                 f"its last evaluation scored {last.get('score', float('nan')):.3g}; training record: "
                 f"$BIRD_CACHE_DIR/experts/{folder.relative_to(folder.parents[1])}/{RECORD_NAME})")
    return ExpertSource(_name(env, steps, seed), policy, described)
