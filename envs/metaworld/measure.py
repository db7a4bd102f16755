"""Measure each task's scripted-expert and uniform-random success rates: `python -m bird.envs.metaworld.measure`.

Writes envs/metaworld/measurements.json (read into spec.extra; the random rate is recorded, not subtracted).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from importlib.metadata import version

import numpy as np

from bird.config.schema import EnvConfig
from bird.envs.demos import record_episode
from bird.envs.metaworld.adapter import MEASUREMENTS_PATH, MetaWorldAdapter, load_measurements
from bird.envs.metaworld.tasks import HORIZON, TASKS

__all__ = ["measure_task"]


def _rate(successes: list[float]) -> dict[str, float]:
    q = np.asarray(successes)
    return {"mean": float(q.mean()), "stderr": float(q.std(ddof=1) / np.sqrt(len(q))) if len(q) > 1 else 0.0}


def measure_task(task: str, episodes: int, seed: int) -> dict:
    """Success rates of the scripted expert and of a uniform-random policy over the same reset seeds."""
    adapter = MetaWorldAdapter(task, EnvConfig(id=f"metaworld/{task}", description="", horizon=HORIZON))
    env = adapter.make_env(seed=seed)
    seeds = [seed * 1000 + i for i in range(episodes)]
    expert, first_hit, random = [], [], []
    policy = adapter.expert_policy()
    for s in seeds:
        ep = record_episode(env, policy, s)
        expert.append(ep["quantity"])
        if ep["success"].any():
            first_hit.append(int(np.argmax(ep["success"])))
        random.append(record_episode(env, None, s)["quantity"])
    env.close()
    exp, rnd = _rate(expert), _rate(random)
    return {
        "scripted_success_rate": exp["mean"],
        "scripted_success_stderr": exp["stderr"],
        "scripted_first_success_step_median": float(np.median(first_hit)) if first_hit else None,
        "random_success_rate": rnd["mean"],
        "random_success_stderr": rnd["stderr"],
        "episodes": episodes,
        "env_seed": seed,
        "reset_seeds": f"{seeds[0]}..{seeds[-1]}",
        "horizon": HORIZON,
        "policies": f"metaworld.policies.{TASKS[task].policy}; uniform random over the action box",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", nargs="*", default=sorted(TASKS))
    args = parser.parse_args()
    out = load_measurements()
    for task in args.tasks:
        out[task] = measure_task(task, args.episodes, args.seed)
        out[task]["measured"] = dt.date.today().isoformat()
        out[task]["metaworld"] = version("metaworld")
        out[task]["command"] = (
            f"python -m bird.envs.metaworld.measure --episodes {args.episodes} --seed {args.seed} --tasks {task}"
        )
        print(task, out[task]["scripted_success_rate"], out[task]["random_success_rate"], flush=True)
        MEASUREMENTS_PATH.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
