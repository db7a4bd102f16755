"""Executor overhead: the same smoke search with the local process pool and with Ray tasks, side by side.

    python bench/bench_executor.py [--env mujoco/hopper] [--repeats 3] [--num-cpus N] [--address ADDR] [--set K=V ...]

Ray's start-up (ray.init plus one warm-up task per core) is measured once and reported separately; the searches
then attach to that Ray, alternating local / Ray, and the ratio compares median wall times (target <= 1.15).
--address attaches to a running Ray instead (its start-up is then the attach).
Both executors must return the same candidate and score (same seeds, deterministic trainings).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import ray
import record
from timing import timed_search


@ray.remote(num_cpus=1)
def _warm() -> int:
    return os.getpid()


def start_ray(num_cpus: int, address: str | None) -> float:
    start = time.perf_counter()
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, object_store_memory=100 * 2**20, log_to_driver=False)
    ray.get([_warm.remote() for _ in range(num_cpus)])
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="mujoco/hopper")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-cpus", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--address", default=None, help="a running Ray's address (default: start a local one)")
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides, e.g. budget.env_steps=256")
    args = parser.parse_args()
    started = record.begin()
    base = ["budget=smoke", f"env={args.env}", "run.progress=false", f"train.workers={args.num_cpus}", *args.set]
    startup = start_ray(args.num_cpus, args.address)
    walls: dict[str, list[float]] = {"local": [], "ray": []}
    outcomes: dict[str, set] = {"local": set(), "ray": set()}
    for _ in range(args.repeats):
        for executor in ("local", "ray"):
            wall, result = timed_search([*base, f"train.executor={executor}"])
            walls[executor].append(wall)
            outcomes[executor].add((result["returned"]["candidate_id"], result["returned_score"]))
    ray.shutdown()
    local, on_ray = statistics.median(walls["local"]), statistics.median(walls["ray"])
    print(f"smoke search, {args.env}, {args.num_cpus} cores, {args.repeats} repeats (alternating)")
    how = f"attach to {args.address}" if args.address else "init"
    print(f"Ray start-up ({how} + {args.num_cpus} warm-up tasks, excluded below): {startup:.2f} s")
    print(f"{'executor':<10} {'median wall':>12}  runs")
    for name in ("local", "ray"):
        print(f"{name:<10} {statistics.median(walls[name]):>10.2f} s  {', '.join(f'{w:.2f}' for w in walls[name])}")
    print(f"ratio ray / local: {on_ray / local:.3f} (target <= 1.15)")
    same = outcomes["local"] == outcomes["ray"] and len(outcomes["local"]) == 1
    print(f"same returned candidate and score on both executors: {same} {sorted(outcomes['local'] | outcomes['ray'])}")
    row = {"env": args.env, "cores": args.num_cpus, "repeats": args.repeats, "ray_startup_s": startup,
           "local_s": local, "ray_s": on_ray, "local_runs_s": " ".join(f"{w:.2f}" for w in walls["local"]),
           "ray_runs_s": " ".join(f"{w:.2f}" for w in walls["ray"]), "ratio": on_ray / local, "same_result": same}
    print(f"row appended to {record.append('executor', row, started)}")


if __name__ == "__main__":
    main()
