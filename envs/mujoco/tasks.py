"""The Gym MuJoCo v5 tasks of BIRD Table 7: gym ids, observation layouts and score definitions."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MujocoTask", "TASKS"]


@dataclass(frozen=True)
class MujocoTask:
    gym_id: str
    # observation layout, in order: ("qpos", skip) | ("qvel", skip) | ("qvel_clip", skip) | ("cos", n) | ("sin", n)
    # | ("qpos_from", n) | ("qvel_first", n) | ("body_delta", "a", "b", dims)
    layout: tuple[tuple, ...]
    # how the episode's benchmark quantity is measured: displacement | survival | final_distance
    score: str
    score_definition: str


TASKS: dict[str, MujocoTask] = {
    "half_cheetah": MujocoTask(
        "HalfCheetah-v5",
        (("qpos", 1), ("qvel", 0)),
        "displacement",
        "forward (+x) displacement of the root over the episode, as mean speed above a uniform-random policy (m/s)",
    ),
    "hopper": MujocoTask(
        "Hopper-v5",
        (("qpos", 1), ("qvel_clip", 0)),
        "displacement",
        "forward (+x) displacement of the root over the episode, as mean speed above a uniform-random policy (m/s)",
    ),
    "swimmer": MujocoTask(
        "Swimmer-v5",
        (("qpos", 2), ("qvel", 0)),
        "displacement",
        "forward (+x) displacement of the root over the episode, as mean speed above a uniform-random policy (m/s)",
    ),
    "inverted_pendulum": MujocoTask(
        "InvertedPendulum-v5",
        (("qpos", 0), ("qvel", 0)),
        "survival",
        "time balanced (steps before the pole falls), scaled so random = 0 and the whole horizon = 1",
    ),
    "reacher": MujocoTask(
        "Reacher-v5",
        (("cos", 2), ("sin", 2), ("qpos_from", 2), ("qvel_first", 2), ("body_delta", "fingertip", "target", 2)),
        "final_distance",
        "final fingertip-to-target distance, scaled so random = 0 and zero distance = 1",
    ),
}
