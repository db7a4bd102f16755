"""Episode metrics that task files name as `score.function` (`module:function`, Episode -> float; higher is better).
Each cites where its definition comes from."""

from __future__ import annotations

import numpy as np

from bird.envs.gym.episode import Episode

__all__ = ["hop_minus_drift"]


def hop_minus_drift(ep: Episode) -> float:
    """std of the torso height over the arriving states minus |net x drift|, both in metres (BIRD's hopper hop-in-place
    metric: safety-research/bird@54a9ce3:tasks/hopper_hop_in_place/shared_spec.yaml `continuous_success.raw`,
    bird/envs/gym_mujoco.py `_fit_hop_minus_drift`). The height is the field `rootz_pos`; x is Hopper's info
    `x_position`, from the reset on."""
    z = ep.field("rootz_pos")[1:]
    x = ep.info("x_position")
    return float(np.std(z)) - abs(float(x[-1] - x[0]))
