"""The local pool's warm workers: searches in one process, each starting from the warm workers the previous one left,
next to the same searches each starting fresh workers (the raw baseline: what every search did before; they fork from
the fork server, or spawn with --set train.start_method=spawn, as the first measurement did), alternating.

    python bench/bench_warm_pool.py [--env mujoco/inverted_pendulum] [--repeats 3] [--set K=V ...]

Both must return the same candidate and score (same seeds, deterministic trainings).
"""

from __future__ import annotations

import argparse
import statistics

import record
import timing

from bird.executors import local


def timed_search(overrides: list[str], warm: bool) -> tuple[float, dict]:
    if not warm:
        local.drop_warm_workers()  # the next pool starts fresh workers
    return timing.timed_search(overrides)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="mujoco/inverted_pendulum")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides, e.g. budget.env_steps=256")
    args = parser.parse_args()
    started = record.begin()
    overrides = ["budget=smoke", f"env={args.env}", "run.progress=false", "video.record=none", *args.set]
    timed_search(overrides, warm=False)  # the first search of a process spawns either way
    walls: dict[str, list[float]] = {"fresh": [], "warm": []}
    outcomes: set = set()
    for _ in range(args.repeats):
        for name in ("fresh", "warm"):
            wall, result = timed_search(overrides, warm=name == "warm")
            walls[name].append(wall)
            outcomes.add((result["returned"]["candidate_id"], result["returned_score"]))
    print(f"smoke search, {args.env}, {args.repeats} repeats (alternating, after one search that warms the pool)")
    print(f"{'workers':<8} {'median wall':>12}  runs")
    for name in ("fresh", "warm"):
        print(f"{name:<8} {statistics.median(walls[name]):>10.2f} s  {', '.join(f'{w:.2f}' for w in walls[name])}")
    print(f"ratio warm / fresh: {statistics.median(walls['warm']) / statistics.median(walls['fresh']):.3f}")
    print(f"same returned candidate and score either way: {len(outcomes) == 1} {sorted(outcomes)}")
    fresh, warm = statistics.median(walls["fresh"]), statistics.median(walls["warm"])
    row = {"env": args.env, "repeats": args.repeats, "fresh_s": fresh, "warm_s": warm, "ratio": warm / fresh,
           "fresh_runs_s": " ".join(f"{w:.2f}" for w in walls["fresh"]),
           "warm_runs_s": " ".join(f"{w:.2f}" for w in walls["warm"]), "same_result": len(outcomes) == 1}
    print(f"row appended to {record.append('warm_pool', row, started)}")


if __name__ == "__main__":
    main()
