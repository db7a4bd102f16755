"""Module-level allocation far beyond the memory limit, touched so it is real."""
# class: module-level
# expect: contained
# runtime-reason: memory limit
import numpy as np

hoard = np.empty(400_000_000)
hoard.fill(1.0)


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {}
