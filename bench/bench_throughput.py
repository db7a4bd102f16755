"""Training throughput of one bird training on one core (env steps per second), per suite: the figure the sweep
compute estimates (`python -m bird.sweeps`) divide by.

    python bench/bench_throughput.py [--env mujoco/hopper metaworld/push] [--steps 32768] [--repeats 2]

Runs bird's training path (bird.learners.sb3_ppo.train_ppo) with budget=matched's learner settings (8 envs,
SB3 PPO, one torch thread) on the env's reference reward, with a single end-of-training evaluation episode.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bird.config.load import compose
from bird.learners.job import make_job
from bird.learners.sb3_ppo import train_ppo


def steps_per_s(env: str, steps: int) -> float:
    cfg = compose(["budget=matched", f"env={env}", "budget.n_checkpoints=1", "budget.eval_episodes=1"])
    with tempfile.TemporaryDirectory() as out:
        result = train_ppo(make_job(cfg, "bench", None, 0, steps, Path(out)))
    if result.failure is not None:
        raise RuntimeError(f"{env}: {result.failure}")
    return result.env_steps / result.wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", nargs="+", default=["mujoco/hopper", "metaworld/push"])
    parser.add_argument("--steps", type=int, default=32768)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"{'env':<24} {'steps/s (median)':>17}  runs")
    for env in args.env:
        runs = [steps_per_s(env, args.steps) for _ in range(args.repeats)]
        print(f"{env:<24} {statistics.median(runs):>17,.0f}  {', '.join(f'{r:,.0f}' for r in runs)}")


if __name__ == "__main__":
    main()
