"""BIRD's random-policy anchors for its ten Gym MuJoCo tasks, re-measured under bird's stack, beside BIRD's values.

    python bench/bench_bird_anchors.py [--episodes 100] [--bird-episodes 12] [--tasks T ...]

For each task (bird's id for it: docs/bird_gym_tasks.md) the uniform-random policy's episode quantity is measured
twice with the task checker's `measure_anchor` (what `python -m bird.envs anchor` and the suites' baselines commands
use): over `--bird-episodes` (12) episodes reset with seeds 0..11 (BIRD's protocol: `anchors.random.source` of each
spec) and over
`--episodes` episodes from seed 0 (the anchor bird's score is measured from). The quantity is put in BIRD's units
(InvertedPendulum: steps survived / horizon, BIRD's balance_fraction). One row per task is appended to bench/results/bird_random_anchors.csv
(bench/record.py: date, machine, load, commit, command; the library versions); BIRD's value, episode count and sigma are copied from
safety-research/bird@54a9ce3:tasks/<task>/shared_spec.yaml (`anchors.random`).
"""

from __future__ import annotations

import argparse
from importlib.metadata import version

import record

from bird.envs.check import measure_anchor
from bird.envs.demos import env_config
from bird.envs.registry import make_adapter

OUT = "bird_random_anchors"  # bench/results/bird_random_anchors.csv
# BIRD task -> (bird env id, BIRD's anchors.random value, its episodes, its sigma; None where the spec gives none)
BIRD = {
    "half_cheetah": ("mujoco/half_cheetah", -4.58, 12, 3.41),
    "half_cheetah_backward": ("gym/half_cheetah_backward", 4.46, 12, 3.87),
    "half_cheetah_target_speed": ("gym/half_cheetah_target_speed", -2.089, 12, 0.078),
    "hopper_hop": ("mujoco/hopper", -0.027, 12, 0.055),
    "hopper_hop_in_place": ("gym/hopper_hop_in_place", -0.0332, 12, 0.0404),
    "swimmer_forward": ("mujoco/swimmer", 0.39, 12, 0.35),
    "swimmer_heading": ("gym/swimmer_heading", 0.0041, 12, 0.0141),
    "reacher_reach": ("gym/reacher_reach", -0.203, 12, 0.086),
    "reacher_hold": ("gym/reacher_hold", 0.02, 12, 0.0319),
    "inverted_pendulum_balance": ("mujoco/inverted_pendulum", 0.004, 5, None),
}
PER_HORIZON = {"inverted_pendulum_balance"}  # BIRD's balance_fraction = steps / horizon; bird measures steps


def _measure(env_id: str, episodes: int, per_horizon: bool) -> tuple[float, float]:
    env = env_config(env_id)
    base = measure_anchor(make_adapter(env), episodes, 0)
    unit = float(env.horizon) if per_horizon else 1.0
    return base["quantity_mean"] / unit, base["quantity_std"] / unit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--bird-episodes", type=int, default=12, help="episodes of the BIRD-protocol measurement")
    parser.add_argument("--tasks", nargs="*", default=sorted(BIRD), choices=sorted(BIRD))
    args = parser.parse_args()
    started = record.begin()
    versions = " ".join(f"{p} {version(p)}" for p in ("gymnasium", "mujoco"))
    for task in args.tasks:
        env_id, value, n, sigma = BIRD[task]
        m12, s12 = _measure(env_id, args.bird_episodes, task in PER_HORIZON)
        m, s = _measure(env_id, args.episodes, task in PER_HORIZON)
        record.append(OUT, {"versions": versions, "bird_task": task, "env": env_id, "bird_value": value,
                            "bird_episodes": n, "bird_sigma": sigma, "bird_protocol_episodes": args.bird_episodes,
                            "bird_protocol_mean": float(f"{m12:.4g}"), "bird_protocol_std": float(f"{s12:.3g}"),
                            "episodes": args.episodes, "mean": float(f"{m:.4g}"), "std": float(f"{s:.3g}")}, started)
        print(f"{task:27} {env_id:30} BIRD {value:>8} (n={n})  n{args.bird_episodes} {m12:>9.4g} ± {s12:<8.3g} "
              f"n{args.episodes} {m:>9.4g} ± {s:.3g}", flush=True)


if __name__ == "__main__":
    main()
