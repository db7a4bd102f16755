"""Episode metrics that task files name as `score.function` (`module:function`, Episode -> float; higher is better),
and the success tests they name as `success.function` ((obs, info) -> bool). Each cites where its definition comes
from; BIRD's are `continuous_success.raw` of its task specs, implemented in safety-research/bird@54a9ce3:
bird/envs/gym_mujoco.py (`_FITNESSES`)."""

from __future__ import annotations

import math

import numpy as np

from bird.envs.gym.episode import Episode

__all__ = ["hop_minus_drift", "target_speed_error", "heading_speed", "dwell_fraction", "mountain_car_at_goal",
           "acrobot_tip_above_line"]

TARGET_SPEED = 2.0  # m/s: half_cheetah_target_speed's cruise (BIRD's TARGET_SPEED_MPS)
TARGET_HEADING = math.pi / 4  # rad: swimmer_heading's diagonal between +x and +y (BIRD's TARGET_HEADING_RAD)
HOLD_RADIUS = 0.05  # m: reacher_hold's dwell radius (BIRD's REACH_HOLD_RADIUS_M)
MOUNTAIN_CAR_GOAL = 0.45  # Gymnasium's MountainCarContinuous-v0 goal_position (its goal_velocity is 0)


def _elapsed(ep: Episode) -> float:
    """Seconds the episode lasted: steps taken times the env's dt."""
    return len(ep.actions) * ep.dt


def hop_minus_drift(ep: Episode) -> float:
    """std of the torso height over the arriving states minus |net x drift|, both in metres (BIRD's hopper hop-in-place
    metric: safety-research/bird@54a9ce3:tasks/hopper_hop_in_place/shared_spec.yaml `continuous_success.raw`,
    bird/envs/gym_mujoco.py `_fit_hop_minus_drift`). The height is the field `rootz_pos`; x is Hopper's info
    `x_position`, from the reset on."""
    z = ep.field("rootz_pos")[1:]
    x = ep.info("x_position")
    return float(np.std(z)) - abs(float(x[-1] - x[0]))


def target_speed_error(ep: Episode) -> float:
    """-|episode-mean forward speed - 2 m/s|, 0 a perfect cruise (BIRD's neg_speed_error:
    safety-research/bird@54a9ce3:tasks/half_cheetah_target_speed/shared_spec.yaml, `_fit_target_speed`). The mean speed
    is the net displacement of info `x_position` over the elapsed time (the mean of per-step speeds, telescoped)."""
    x = ep.info("x_position")
    return -abs(float(x[-1] - x[0]) / _elapsed(ep) - TARGET_SPEED)


def heading_speed(ep: Episode) -> float:
    """Mean speed along the 45-degree diagonal between +x and +y, m/s, negative the wrong way (BIRD's heading_speed:
    safety-research/bird@54a9ce3:tasks/swimmer_heading/shared_spec.yaml, `_fit_heading_speed`): the net displacement
    of info (`x_position`, `y_position`) projected on the heading, over the elapsed time."""
    x, y = ep.info("x_position"), ep.info("y_position")
    along = float(x[-1] - x[0]) * math.cos(TARGET_HEADING) + float(y[-1] - y[0]) * math.sin(TARGET_HEADING)
    return along / _elapsed(ep)


def dwell_fraction(ep: Episode) -> float:
    """Fraction of the arriving states with the fingertip within 0.05 m of the target (BIRD's dwell_fraction:
    safety-research/bird@54a9ce3:tasks/reacher_hold/shared_spec.yaml, `_fit_reach_hold`); the distance is the norm of
    the field `fingertip_minus_target`."""
    d = np.linalg.norm(np.atleast_2d(ep.field("fingertip_minus_target"))[1:], axis=-1)
    return float(np.mean(d <= HOLD_RADIUS))


def mountain_car_at_goal(obs: np.ndarray, info: dict) -> bool:
    """The car is at the flag: position >= 0.45 with a velocity >= 0 (Gymnasium's MountainCarContinuous-v0 termination,
    gymnasium/envs/classic_control/continuous_mountain_car.py `step`)."""
    return bool(obs[0] >= MOUNTAIN_CAR_GOAL and obs[1] >= 0.0)


def acrobot_tip_above_line(obs: np.ndarray, info: dict) -> bool:
    """The free end is more than one link length above the pivot: -cos(t1) - cos(t1 + t2) > 1 (Gymnasium's Acrobot-v1
    termination, gymnasium/envs/classic_control/acrobot.py `_terminal`), from the observation's cosines and sines."""
    cos1, sin1, cos2, sin2 = (float(v) for v in obs[:4])
    return bool(-cos1 - (cos1 * cos2 - sin1 * sin2) > 1.0)
