"""Making a Meta-World env, side by side in one run: Meta-World's own `gym.make("Meta-World/MT1", ...)` (the raw
baseline: it draws MT1's 50 goal variants again for every env) vs bird's adapter (`make_env`, which draws them once
per task and process), alternating. A training makes n_envs + 2 of them (its envs and its evaluation envs).

    python bench/bench_metaworld_env.py [--tasks push drawer_open] [--repeats 10]

Both sides must give the same first observation after reset(seed=0).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np
import record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["push", "drawer_open", "reach"])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    import metaworld  # noqa: F401  (registers Meta-World/MT1)

    from bird.config.schema import EnvConfig
    from bird.envs.metaworld.adapter import SeededReset
    from bird.envs.metaworld.tasks import HORIZON, canonical_task
    from bird.envs.registry import make_adapter

    started = record.begin()
    print(f"making one Meta-World env (seed 0, horizon {HORIZON}), {args.repeats} repeats, alternating; CPU seconds")
    print(f"  {'task':<16} {'metaworld':>10} {'bird':>8} {'ratio bird / metaworld':>24}")
    same, ratios = True, []
    for task in args.tasks:
        adapter = make_adapter(EnvConfig(id=f"metaworld/{task}", description="bench", horizon=HORIZON))
        name = adapter.defn.mw_name
        def metaworlds(name: str = name) -> gym.Env:
            return SeededReset(gym.make("Meta-World/MT1", env_name=name, seed=0, max_episode_steps=HORIZON,
                                        disable_env_checker=True))

        sides = {"metaworld": metaworlds, "bird": adapter.make_env}
        cpu: dict[str, list[float]] = {side: [] for side in sides}
        first: dict[str, np.ndarray] = {}
        for _ in range(args.repeats):
            for side, make in sides.items():
                start = time.process_time()
                env = make()
                cpu[side].append(time.process_time() - start)
                first[side] = env.reset(seed=0)[0]
                env.close()
        same = same and bool(np.array_equal(first["metaworld"], first["bird"]))
        ratio = statistics.median(cpu["bird"]) / statistics.median(cpu["metaworld"])
        ratios.append(ratio)
        record.append("metaworld_env", {"task": canonical_task(task), "repeats": args.repeats,
                                        "metaworld_cpu_s": statistics.median(cpu["metaworld"]),
                                        "bird_cpu_s": statistics.median(cpu["bird"]), "ratio": ratio,
                                        "same_first_obs": bool(np.array_equal(first["metaworld"], first["bird"]))},
                      started)
        print(f"  {canonical_task(task):<16} {statistics.median(cpu['metaworld']):9.3f}s "
              f"{statistics.median(cpu['bird']):7.3f}s {ratio:24.3f}")
    print(f"ratio bird / metaworld, median over tasks: {statistics.median(ratios):.3f}")
    print(f"same first observation either way: {same}")


if __name__ == "__main__":
    main()
