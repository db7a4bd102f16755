"""Allocate 3.2 GB in a call; the machine has the memory, the sandbox must not give it."""
# class: resources
# expect: contained
# runtime-reason: memory limit
import numpy as np


def compute_reward(obs, action, next_obs, info):
    hoard = np.empty(400_000_000)
    hoard.fill(1.0)
    return next_obs["x"] + hoard[0] * 0, {}
