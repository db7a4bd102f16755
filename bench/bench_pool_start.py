"""How the local pool starts its workers, side by side in one run: forked from the fork server, which imports the
learners once (train.start_method=forkserver, the default) vs spawned, each worker importing torch, Stable-Baselines3
and torch._dynamo itself (spawn: the raw baseline, how every pool started before), alternating. Each side is one smoke
search on the command line, as a sweep job or `make run` starts it: a fresh process with a fresh pool.

    python bench/bench_pool_start.py [--env mujoco/inverted_pendulum] [--workers 2] [--repeats 3] [--set K=V ...]

CPU counts every process of the search (this script is their subreaper, so orphans are reaped here too: the fork
server and its workers). Both sides must return the same candidate and score.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
PR_SET_CHILD_SUBREAPER = 36


def _reap_all() -> None:
    """Wait for every descendant that was reparented to this process."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed_cli_search(overrides: list[str]) -> tuple[float, float, dict]:
    """(wall s, CPU s of every process it started, result.json) of one `python -m bird` search."""
    _reap_all()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "bird", *overrides, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"the search failed:\n{proc.stderr[-3000:]}")
        result = json.loads((Path(run_dir) / "result.json").read_text())
    _reap_all()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="mujoco/inverted_pendulum")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides, e.g. budget.env_steps=256")
    args = parser.parse_args()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed: the CPU of the fork server's workers would be missed")
    started = record.begin()
    overrides = ["budget=smoke", f"env={args.env}", "run.progress=false", "video.record=none",
                 f"train.workers={args.workers}", f"budget.max_candidates={args.workers}", *args.set]
    walls: dict[str, list[float]] = {"forkserver": [], "spawn": []}
    cpus: dict[str, list[float]] = {"forkserver": [], "spawn": []}
    outcomes: set = set()
    for _ in range(args.repeats):
        for name in walls:
            wall, cpu, result = timed_cli_search([*overrides, f"train.start_method={name}"])
            walls[name].append(wall)
            cpus[name].append(cpu)
            outcomes.add((result["returned"]["candidate_id"], result["returned_score"]))
    print(f"smoke search on the command line, {args.env}, {args.workers} workers, {args.repeats} repeats (alternating)")
    print(f"{'start':<11} {'median wall':>12} {'median CPU':>11}  runs (wall / CPU s)")
    for name in walls:
        runs = ", ".join(f"{w:.2f}/{c:.2f}" for w, c in zip(walls[name], cpus[name], strict=True))
        print(f"{name:<11} {statistics.median(walls[name]):>10.2f} s {statistics.median(cpus[name]):>9.2f} s  {runs}")
    for what, values in (("wall", walls), ("CPU", cpus)):
        print(f"ratio forkserver / spawn, {what}: {statistics.median(values['forkserver']) / statistics.median(values['spawn']):.3f}")
    print(f"same returned candidate and score either way: {len(outcomes) == 1} {sorted(outcomes)}")
    med = {f"{name}_{what}_s": statistics.median(values[name]) for what, values in (("wall", walls), ("cpu", cpus))
           for name in walls}
    row = {"env": args.env, "workers": args.workers, "repeats": args.repeats, **med,
           "ratio": med["forkserver_wall_s"] / med["spawn_wall_s"],
           "ratio_cpu": med["forkserver_cpu_s"] / med["spawn_cpu_s"], "same_result": len(outcomes) == 1}
    print(f"row appended to {record.append('pool_start', row, started)}")


if __name__ == "__main__":
    main()
