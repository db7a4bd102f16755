"""The isolated JAX trainer's start, side by side in one run: loading the compile step's executables
(bird/learners/jax_executables.py) vs tracing and compiling the training program in the trainer with JAX's persistent
cache warm (the raw baseline: how every trainer started before), alternating. A search pays this per trainer launch:
one per iteration, and one per culprit-search step.

    python bench/bench_trainer_start.py [--task hopper] [--repeats 3] [--set K=V ...]

Both sides train the same job; their curves must be equal, bit for bit (the same compiled program).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

TINY = ["train.jax.policy_hidden_layer_sizes=[16]", "train.jax.value_hidden_layer_sizes=[16]", "train.jax.num_envs=4",
        "train.jax.batch_size=4", "train.jax.num_minibatches=2", "train.jax.unroll_length=8",
        "train.jax.num_updates_per_batch=1", "train.jax.min_updates=1"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="hopper")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides, e.g. env.horizon=20")
    args = parser.parse_args()
    os.environ["BIRD_JAX_CACHE"] = tempfile.mkdtemp(prefix="bird-bench-trainer-")  # both sides start from nothing
    from bird.config.load import compose
    from bird.jax_cache import enable_compilation_cache
    from bird.learners.jax_ppo import GroupTraining
    from bird.learners.job import make_job
    from bird.learners.trainer_host import run_trainer

    enable_compilation_cache()
    cfg = compose(["budget=smoke", f"env=brax/{args.task}", "train.learner=jax_ppo", "run.progress=false",
                   "budget.n_checkpoints=1", "budget.eval_episodes=1", *TINY, *args.set])
    out = Path(tempfile.mkdtemp(prefix="bird-bench-trainer-runs-"))
    job = make_job(cfg, "c0", None, 0, 256, out / "c0")  # the reference reward: no program to export
    GroupTraining([job], 1)  # fills JAX's persistent cache, which the baseline's trainer reads
    setup: dict[str, list[float]] = {"executables": [], "tracing": []}
    curves = set()
    for _ in range(args.repeats):
        for name in setup:
            attempt = run_trainer([job], 1, executables=name == "executables")
            assert attempt.group is None and attempt.results[0].ok, (attempt.group, attempt.results)
            setup[name].append(attempt.seconds["setup_s"])
            curves.add(repr(attempt.results[0].curve))
    print(f"isolated trainer start, brax/{args.task}, {args.repeats} repeats (alternating, after the compile step)")
    print("setup (load the task and the training program), median seconds:")
    for name, values in setup.items():
        print(f"  {name:<12} {statistics.median(values):6.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    ratio = statistics.median(setup["executables"]) / statistics.median(setup["tracing"])
    print(f"ratio executables / tracing: {ratio:.3f}")
    print(f"same curve either way: {len(curves) == 1}")


if __name__ == "__main__":
    main()
