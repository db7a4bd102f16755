"""Training throughput of one bird training on one core (env steps per second), per suite: the figure the sweep
compute estimates (`python -m bird.sweeps`) divide by.

    python bench/bench_throughput.py [--env mujoco/hopper metaworld/push] [--steps 32768] [--repeats 2]

Runs bird's learner as the executors call it (`call_learner`) with budget=matched's learner settings (SB3 PPO at its
defaults on one env, as BIRD's matched runs; one torch thread) on the env's reference reward, with a single
end-of-training evaluation episode. Extra overrides (e.g. trainer=sb3_tuned) go after --override.
`--steps 256 --repeats 1` is a smoke run (seconds).

Two rates per run: env steps per wall second, and per CPU second of the process (user + system, its children
included). On a shared machine the wall rate falls with the load; the CPU rate is what one dedicated core does, and it
is the figure `python -m bird.sweeps` divides by.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import record

from bird.config.load import compose
from bird.executors.jobs import call_learner
from bird.learners.job import make_job


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def steps_per_s(env: str, steps: int, overrides: list[str] | None = None) -> tuple[float, float]:
    """(env steps per wall second, env steps per CPU second) of one training."""
    cfg = compose(["budget=matched", f"env={env}", "budget.n_checkpoints=1", "budget.eval_episodes=1",
                   *(overrides or [])])
    with tempfile.TemporaryDirectory() as out:
        cpu = _cpu_s()
        job = make_job(cfg, "bench", None, 0, steps, Path(out))
        result = call_learner(cfg.train.learner, [job], lambda *_: None)[0]
        cpu = _cpu_s() - cpu
    if result.failure is not None:
        raise RuntimeError(f"{env}: {result.failure}")
    return result.env_steps / result.wall_s, result.env_steps / cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", nargs="+", default=["mujoco/hopper", "metaworld/push"])
    parser.add_argument("--steps", type=int, default=32768)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--override", nargs="*", default=[], help="Hydra overrides, e.g. trainer=sb3_tuned")
    args = parser.parse_args()
    started = record.begin()
    print(f"{'env':<24} {'steps/s wall (median)':>22} {'steps/CPU-s (median)':>21}  runs (wall / CPU)")
    for env in args.env:
        runs = [steps_per_s(env, args.steps, args.override) for _ in range(args.repeats)]
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        shown = ", ".join(f"{w:,.0f} / {c:,.0f}" for w, c in runs)
        print(f"{env:<24} {wall:>22,.0f} {cpu:>21,.0f}  {shown}", flush=True)
        record.append("throughput", {"env": env, "steps": args.steps, "repeats": args.repeats,
                                     "overrides": " ".join(args.override), "steps_per_wall_s": wall,
                                     "steps_per_cpu_s": cpu}, started)


if __name__ == "__main__":
    main()
