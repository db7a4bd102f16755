"""Measure each task's scripted-expert and uniform-random success rates: `python -m bird.envs.metaworld.measure`.

Writes envs/metaworld/measurements.json (read into spec.extra; the random rate is recorded, not subtracted), one task
at a time (`--jobs N`: N tasks at once). An episode stops at its first successful step: the success rate and the first
success's step are those of the full episode, which Meta-World would run on to the horizon.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import json
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from bird.config.schema import EnvConfig
from bird.envs.demos import record_episode
from bird.envs.metaworld.adapter import MEASUREMENTS_PATH, MetaWorldAdapter, load_measurements
from bird.envs.metaworld.tasks import HORIZON, MT10, TASKS

__all__ = ["measure_task", "markdown_table"]


def _rate(successes: list[float]) -> dict[str, float]:
    q = np.asarray(successes)
    return {"mean": float(q.mean()), "stderr": float(q.std(ddof=1) / np.sqrt(len(q))) if len(q) > 1 else 0.0}


def measure_task(task: str, episodes: int, seed: int) -> dict:
    """Success rates of the scripted expert and of a uniform-random policy over the same reset seeds."""
    adapter = MetaWorldAdapter(task, EnvConfig(id=f"metaworld/{task}", description="", horizon=HORIZON))
    env = adapter.make_env(seed=seed)
    env.end_on_success = True  # the BenchmarkScoreWrapper (outermost) ends an episode at its first success
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


def _measured(task: str, episodes: int, seed: int) -> tuple[str, dict[str, Any]]:
    """One task's entry of measurements.json, with the date, the metaworld version and the command."""
    entry = measure_task(task, episodes, seed)
    entry["measured"] = dt.date.today().isoformat()
    entry["metaworld"] = version("metaworld")
    entry["command"] = f"python -m bird.envs.metaworld.measure --episodes {episodes} --seed {seed} --tasks {task}"
    return task, entry


def _store(task: str, entry: dict[str, Any]) -> None:
    """Add one task's entry to measurements.json (read, updated and replaced under a lock: several jobs write it)."""
    with open(Path(tempfile.gettempdir()) / "bird-metaworld-measurements.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = load_measurements()
        out[task] = entry
        tmp = MEASUREMENTS_PATH.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
        tmp.replace(MEASUREMENTS_PATH)


def _rate_cell(entry: dict[str, Any], kind: str) -> str:
    mean, err = entry[f"{kind}_success_rate"], entry[f"{kind}_success_stderr"]
    return f"{mean:.2f}" if err == 0 else f"{mean:.2f} ± {err:.2f}"


def markdown_table() -> str:
    """docs/metaworld.md's task table from the task table and measurements.json."""
    measured = load_measurements()
    rows = ["| env | Meta-World | set | objects | scripted expert success | uniform-random success |",
            "|---|---|---|---|---|---|"]
    for key, t in sorted(TASKS.items()):
        m = measured.get(key)
        objects = ", ".join(f"`{o}_*`" for o in (t.obj, t.obj2) if o)
        rates = (_rate_cell(m, "scripted"), _rate_cell(m, "random")) if m else ("not measured", "not measured")
        rows.append(f"| metaworld/{key} | {t.mw_name} | {'MT10' if key in MT10 else 'MT50'} | {objects} | "
                    f"{rates[0]} | {rates[1]} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", nargs="*", default=sorted(TASKS))
    parser.add_argument("--jobs", type=int, default=1, help="tasks measured at once, each in its own process")
    parser.add_argument("--table", action="store_true", help="print docs/metaworld.md's task table and exit")
    args = parser.parse_args()
    if args.table:
        print(markdown_table(), end="")
        return
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        for done in as_completed([pool.submit(_measured, t, args.episodes, args.seed) for t in args.tasks]):
            task, entry = done.result()
            _store(task, entry)
            print(task, entry["scripted_success_rate"], entry["random_success_rate"], flush=True)


if __name__ == "__main__":
    main()
