"""Measure the uniform-random policy's benchmark quantity per task: `python -m bird.envs.mujoco.baselines`."""

from __future__ import annotations

import argparse
import datetime as dt
import json

import numpy as np

from bird.config.schema import EnvConfig
from bird.envs.mujoco.adapter import BASELINES_PATH, MujocoAdapter
from bird.envs.mujoco.tasks import TASKS

__all__ = ["measure_random_quantity"]


def measure_random_quantity(task: str, episodes: int, seed: int, horizon: int = 1000) -> dict:
    """Roll out a uniform-random policy; return mean/std of the raw episode quantity and the seeds used."""
    adapter = MujocoAdapter(task, EnvConfig(id=f"mujoco/{task}", description="", horizon=horizon))
    env = adapter.make_unanchored_env(seed=seed)
    quantities = []
    seeds = [seed + i for i in range(episodes)]
    for s in seeds:
        env.reset(seed=s)
        env.action_space.seed(s)
        while True:
            _, _, term, trunc, info = env.step(env.action_space.sample())
            if term or trunc:
                quantities.append(info["bird_episode"]["quantity"])
                break
    env.close()
    q = np.asarray(quantities)
    return {
        "quantity_mean": float(q.mean()),
        "quantity_std": float(q.std(ddof=1)) if len(q) > 1 else 0.0,
        "episodes": episodes,
        "seeds": seeds,
        "horizon": horizon,
        "policy": "uniform random over the action box",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", nargs="*", default=sorted(TASKS))
    args = parser.parse_args()
    out = json.loads(BASELINES_PATH.read_text()) if BASELINES_PATH.exists() else {}
    for task in args.tasks:
        out[task] = measure_random_quantity(task, args.episodes, args.seed)
        out[task]["measured"] = dt.date.today().isoformat()
        out[task]["command"] = f"python -m bird.envs.mujoco.baselines --episodes {args.episodes} --seed {args.seed}"
        print(task, out[task]["quantity_mean"], "+-", out[task]["quantity_std"])
    BASELINES_PATH.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
