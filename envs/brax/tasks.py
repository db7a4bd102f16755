"""The Brax suite: brax env names, observation layouts (from each env's _get_obs), score kinds and backends."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BraxTask", "TASKS", "BACKENDS"]

BACKENDS = ("generalized", "positional", "spring", "mjx")
_FORWARD = "forward (+x) displacement of the torso over the episode, as mean speed above a uniform-random policy (m/s)"


@dataclass(frozen=True)
class BraxTask:
    brax_name: str  # brax.envs registry name
    # observation layout over the model's joints (envs/mujoco/obs_index.py segments), read off the env's _get_obs
    layout: tuple[tuple, ...]
    score: str  # displacement | survival | final_distance (the Gym MuJoCo suite's definitions)
    score_definition: str
    backends: tuple[str, ...]  # physics backends the brax env accepts
    default_backend: str  # env.backend when unset (measured: bench/results/brax_backends.csv)


_REACHER_LAYOUT = (
    ("cos", 2), ("sin", 2), ("qpos_from", 2),
    # brax's "tip_vel": body1's velocity moved by a fixed 0.11 m along world x, not body1's own x axis
    ("field", "fingertip_vel", 2, "velocity",
     "xy velocity of the second link's origin plus its angular velocity crossed with (0.11, 0, 0) m in the world "
     "frame (brax's tip velocity: the fingertip's velocity when the arm points along +x)", "m/s", "xy"),
    ("field", "fingertip_minus_target", 3, "position_delta", "fingertip position minus target position (x, y, z)",
     "m", "xyz"),
)

TASKS: dict[str, BraxTask] = {
    "half_cheetah": BraxTask("halfcheetah", (("qpos", 1), ("qvel", 0)), "displacement", _FORWARD, BACKENDS,
                             "positional"),
    "hopper": BraxTask("hopper", (("qpos_height", 1), ("qvel_clip", 0)), "displacement", _FORWARD, BACKENDS,
                       "positional"),
    "walker2d": BraxTask("walker2d", (("qpos_height", 1), ("qvel_clip", 0)), "displacement", _FORWARD, BACKENDS,
                         "positional"),
    "ant": BraxTask("ant", (("qpos", 2), ("qvel", 0)), "displacement", _FORWARD, BACKENDS, "positional"),
    "swimmer": BraxTask("swimmer", (("qpos", 2), ("qvel", 0)), "displacement", _FORWARD, ("generalized",),
                        "generalized"),
    "inverted_pendulum": BraxTask(
        "inverted_pendulum", (("qpos", 0), ("qvel", 0)), "survival",
        "time balanced (steps before the pole falls), scaled so random = 0 and the whole horizon = 1", BACKENDS,
        "positional"),
    "reacher": BraxTask("reacher", _REACHER_LAYOUT, "final_distance",
                        "final fingertip-to-target distance in the xy plane, scaled so random = 0 and zero distance = 1",
                        BACKENDS, "positional"),
}
