"""Measure the uniform-random policy's benchmark quantity per Brax task and backend:
`python -m bird.envs.brax.baselines [--tasks hopper ...] [--backend positional]`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time

import numpy as np

from bird.envs.brax.adapter import BASELINES_PATH, anchor_key, brax_env
from bird.envs.brax.episodes import episode_env, run_episodes
from bird.envs.brax.tasks import TASKS

__all__ = ["measure_random_quantity"]


def measure_random_quantity(task: str, backend: str, episodes: int, seed: int, horizon: int = 1000) -> dict:
    """Roll out a uniform-random policy on [-1, 1]^A; episode i resets with PRNGKey(seed + i)."""
    import jax

    env = brax_env(TASKS[task].brax_name, backend)
    wrapped = episode_env(env, horizon)
    seeds = [seed + i for i in range(episodes)]
    keys = jax.vmap(jax.random.PRNGKey)(np.asarray(seeds))

    def act(obs, key):
        return jax.random.uniform(key, (obs.shape[0], env.action_size), minval=-1.0, maxval=1.0)

    run = jax.jit(lambda k: run_episodes(wrapped, TASKS[task].score, horizon, act, keys, k))
    q, length = run(jax.random.PRNGKey(seed + 10**6))
    q = np.asarray(q, dtype=np.float64)
    return {"quantity_mean": float(q.mean()), "quantity_std": float(q.std(ddof=1)) if len(q) > 1 else 0.0,
            "mean_length": float(np.mean(length)), "episodes": episodes, "seeds": seeds, "horizon": horizon,
            "policy": "uniform random over [-1, 1]^A"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", nargs="*", default=sorted(TASKS))
    parser.add_argument("--backend", default=None, help="default: each task's default backend")
    args = parser.parse_args()
    out = json.loads(BASELINES_PATH.read_text()) if BASELINES_PATH.exists() else {}
    for task in args.tasks:
        backend = args.backend or TASKS[task].default_backend
        start = time.monotonic()
        entry = measure_random_quantity(task, backend, args.episodes, args.seed)
        entry["measured"] = dt.date.today().isoformat()
        entry["command"] = (f"python -m bird.envs.brax.baselines --episodes {args.episodes} --seed {args.seed} "
                            f"--tasks {task} --backend {backend}")
        out[anchor_key(task, backend)] = entry
        print(f"{task}/{backend}: {entry['quantity_mean']:.4f} +- {entry['quantity_std']:.4f} "
              f"({time.monotonic() - start:.0f} s)", flush=True)
        BASELINES_PATH.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
