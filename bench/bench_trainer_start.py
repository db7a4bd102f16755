"""The isolated JAX trainer's start, side by side in one run: loading the compile step's executables
(bird/learners/jax_executables.py) vs tracing and compiling the training program in the trainer with JAX's persistent
cache warm (the raw baseline: how every trainer started before), alternating. A search pays this per trainer launch:
one per iteration, and one per culprit-search step.

Then what a fresh host process pays before its first trainer of a shape (each cell of a sweep, a resumed search):
reading the compile step's stored output (StoredPrograms) vs running the compile step (the raw baseline: it traces
the program and loads its executables from the store), alternating, each in a new process.

    python bench/bench_trainer_start.py [--task hopper] [--repeats 3] [--set K=V ...]

Both sides train the same job; their curves must be equal, bit for bit (the same compiled program), and both host
sides must hand the trainer the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import record

TINY = ["train.jax.policy_hidden_layer_sizes=[16]", "train.jax.value_hidden_layer_sizes=[16]", "train.jax.num_envs=4",
        "train.jax.batch_size=4", "train.jax.num_minibatches=2", "train.jax.unroll_length=8",
        "train.jax.num_updates_per_batch=1", "train.jax.min_updates=1"]

# a fresh process: ensure_compiled for the pickled jobs, timed (wall, and CPU of the process and its children)
FRESH = """import hashlib, json, pickle, resource, sys, time
from bird.learners.trainer_host import ensure_compiled
jobs = pickle.loads(open(sys.argv[1], "rb").read())
start, used = time.monotonic(), [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
out = ensure_compiled(jobs, 1, 1800.0)
cpu = sum(r.ru_utime + r.ru_stime - u.ru_utime - u.ru_stime
          for r, u in zip([resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)], used))
print(json.dumps({"wall": time.monotonic() - start, "cpu": cpu, "sha": hashlib.sha256(out).hexdigest()}))
"""


def fresh_process(jobs_file: Path) -> dict:
    """`FRESH` in a new interpreter with this process's environment (BIRD_JAX_CACHE: the bench's store)."""
    proc = subprocess.run([sys.executable, "-c", FRESH, str(jobs_file)], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def host_side(job: Any, repeats: int, out: Path) -> dict[str, float]:
    """The stored output vs the compile step, each in a fresh process, alternating; their medians."""
    from bird.learners.jax_executables import store_dir

    found = sorted(store_dir().glob("*.program"))  # the bench's own store: this job's shape only
    assert len(found) == 1, f"the compile step stored {len(found)} outputs"
    stored = found[0]
    aside = stored.with_suffix(".aside")
    jobs_file = out / "jobs.pkl"
    jobs_file.write_bytes(pickle.dumps([job]))
    seen: dict[str, list[dict]] = {"stored output": [], "compile step": []}
    for _ in range(repeats):
        for name, runs in seen.items():
            if name == "compile step":
                os.replace(stored, aside)  # not found: the compile step runs (and stores its output again)
            runs.append(fresh_process(jobs_file))
            if name == "compile step":
                os.replace(aside, stored)
    print(f"host side in a fresh process, before its first trainer of this shape, {repeats} repeats (alternating):")
    for name, runs in seen.items():
        walls = ", ".join(f"{r['wall']:.2f}" for r in runs)
        print(f"  {name:<14} {statistics.median(r['wall'] for r in runs):7.3f} s wall"
              f"  {statistics.median(r['cpu'] for r in runs):7.3f} s CPU  ({walls})")
    med = {f"{key}_{what}_s": statistics.median(r[what] for r in seen[name])
           for key, name in (("stored", "stored output"), ("compile_step", "compile step")) for what in ("wall", "cpu")}
    for what in ("wall", "cpu"):
        ratio = med[f"stored_{what}_s"] / med[f"compile_step_{what}_s"]
        print(f"ratio stored output / compile step, {'CPU' if what == 'cpu' else what}: {ratio:.4f}")
    same = len({r['sha'] for runs in seen.values() for r in runs}) == 1
    print(f"same executables either way: {same}")
    return {**med, "host_ratio": med["stored_wall_s"] / med["compile_step_wall_s"],
            "host_ratio_cpu": med["stored_cpu_s"] / med["compile_step_cpu_s"], "same_executables": same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="hopper")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides, e.g. env.horizon=20")
    args = parser.parse_args()
    started = record.begin()
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
    host = host_side(job, args.repeats, out)
    row = {"task": args.task, "repeats": args.repeats, "executables_s": statistics.median(setup["executables"]),
           "tracing_s": statistics.median(setup["tracing"]), "ratio": ratio, "same_curve": len(curves) == 1, **host}
    print(f"row appended to {record.append('trainer_start', row, started)}")


if __name__ == "__main__":
    main()
