"""Training steps per second on a BabyAI level, side by side in one run: SB3's own PPO (MlpPolicy, SB3's defaults but
for n_steps) on the same env and bird's learner (train.learner=sb3_ppo: the grid CNN of bird/learners/grid_policy.py,
a GRACE-style reward program relabelling every rollout in the sandbox, checkpoint evaluations), alternating.

    python bench/bench_babyai_ppo.py [--level GoToRedBall] [--steps 4096] [--repeats 3]

Appends a dated row per run to bench/results/babyai_ppo.csv through bench/record.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import record

# the offline synthesiser's first GoToRedBall reward (a distance between two cell classes of the grid)
PROGRAM = """import numpy as np


def grid_distance(grid, a, b):
    ca = np.argwhere((grid[..., 0] == a[0]) & (grid[..., 1] == a[1]))
    cb = np.argwhere((grid[..., 0] == b[0]) & (grid[..., 1] == b[1]))
    if len(ca) == 0 or len(cb) == 0:
        return float(grid.shape[0] + grid.shape[1])
    return float(np.abs(ca[:, None, :] - cb[None, :, :]).sum(-1).min())


class Reward:
    def __init__(self, extra_info=None):
        self.extra_info = extra_info

    def reward_fn(self, state):
        d = grid_distance(state['grid'], (6, 0), (10, 0))
        return (100.0 if d < 1.5 else 0.0) + 0.99 / (1.0 + d / 0.05)
"""


def _sb3(level: str, steps: int, n_envs: int, n_steps: int, seed: int) -> float:
    """Seconds of SB3's PPO.learn on bird's BabyAI env (the env's own sparse reward, no bird machinery)."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from bird.envs.demos import env_config
    from bird.envs.registry import make_adapter

    torch.set_num_threads(1)
    adapter = make_adapter(env_config(f"babyai/{level}"))
    venv = DummyVecEnv([adapter.make_env for _ in range(n_envs)])
    model = PPO("MlpPolicy", venv, n_steps=n_steps, seed=seed, device="cpu", verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return time.perf_counter() - start


def _bird(level: str, steps: int, n_envs: int, n_steps: int, seed: int) -> float:
    """Seconds of bird's learner (sb3_ppo with the grid CNN, a sandboxed reward program, 2 checkpoint evaluations)."""
    from bird.config.load import compose
    from bird.learners.job import make_job
    from bird.learners.sb3_ppo import train_ppo

    cfg = compose([f"env=babyai/{level}", "budget=smoke", f"budget.n_envs={n_envs}", f"train.n_steps={n_steps}",
                   "reward.contract=reward_class", "run.progress=false"])
    with tempfile.TemporaryDirectory() as out:
        job = make_job(cfg, "bench", PROGRAM, seed, steps, Path(out))
        start = time.perf_counter()
        result = train_ppo(job)
        elapsed = time.perf_counter() - start
    if result.failure is not None:
        raise SystemExit(f"bird's training failed: {result.failure}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="GoToRedBall")
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--n-envs", type=int, default=2)
    parser.add_argument("--n-steps", type=int, default=512, help="PPO rollout length per env (both sides)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    started = record.begin()
    load = os.getloadavg()[0]
    sides = {"sb3": _sb3, "bird": _bird}
    secs: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(args.repeats):
        for side, run in sides.items():
            secs[side].append(run(args.level, args.steps, args.n_envs, args.n_steps, 0))
    sps = {side: args.steps / statistics.median(v) for side, v in secs.items()}
    ratio = sps["bird"] / sps["sb3"]
    print(f"babyai/{args.level}: {args.steps} steps, n_envs {args.n_envs}, n_steps {args.n_steps}, "
          f"{args.repeats} repeats (median), load {load:.2f}")
    print(f"  SB3 PPO (MlpPolicy, the env's reward)              {sps['sb3']:8.0f} steps/s")
    print(f"  bird sb3_ppo (grid CNN, sandboxed reward, evals)   {sps['bird']:8.0f} steps/s")
    print(f"ratio bird / SB3 = {ratio:.3f}")
    path = record.append("babyai_ppo", {"level": args.level, "steps": args.steps, "n_envs": args.n_envs,
                                        "n_steps": args.n_steps, "sb3_steps_per_s": round(sps["sb3"]),
                                        "bird_steps_per_s": round(sps["bird"]), "ratio": round(ratio, 3)}, started)
    print(f"row appended to {path}")

if __name__ == "__main__":
    main()
