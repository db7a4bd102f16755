"""The Gym MuJoCo v5 tasks: BIRD Table 7's five and GRACE Table 1's Walker2d, Ant and Humanoid (with Hopper): gym ids,
observation layouts and score definitions."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MujocoTask", "TASKS"]


@dataclass(frozen=True)
class MujocoTask:
    gym_id: str
    # observation layout, in order: ("qpos", skip) | ("qvel", skip) | ("qvel_clip", skip) | ("cos", n) | ("sin", n)
    # | ("qpos_from", n) | ("qvel_first", n) | ("body_delta", "a", "b", dims)
    # | ("field", name, size, kind, description, unit, axis) (a quantity no joint names: contact forces)
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

_FORWARD = "forward (+x) displacement of the root over the episode, as mean speed above a uniform-random policy (m/s)"


def _per_body(name: str, bodies: int, per: int, kind: str, what: str) -> tuple:
    """A ("field", ...) layout segment of `per` numbers for each of `bodies` bodies (the world body left out)."""
    return ("field", name, bodies * per, kind, f"{what}, {per} numbers for each of the {bodies} bodies after the "
            "world body, body-major", "", "")


# GRACE Table 1 (Hjelm et al., arXiv 2510.02180v2): Hopper, Walker, Ant, Humanoid; the reference reward is Gymnasium's
TASKS |= {
    "walker2d": MujocoTask("Walker2d-v5", (("qpos", 1), ("qvel_clip", 0)), "displacement", _FORWARD),
    "ant": MujocoTask(
        "Ant-v5",
        (("qpos", 2), ("qvel", 0), _per_body("cfrc_ext", 13, 6, "contact", "external contact forces (clipped)")),
        "displacement", _FORWARD),
    "humanoid": MujocoTask(
        "Humanoid-v5",
        (("qpos", 2), ("qvel", 0), _per_body("cinert", 13, 10, "other", "mass and inertia about the centre of mass"),
         _per_body("cvel", 13, 6, "other", "centre-of-mass based velocities"),
         ("field", "qfrc_actuator", 17, "other", "actuator forces on the 17 hinge joints", "", ""),
         _per_body("cfrc_ext", 13, 6, "contact", "external contact forces")),
        "displacement", _FORWARD),
}
