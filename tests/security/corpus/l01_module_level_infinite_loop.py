"""Module-level code that never finishes: it must be stopped by the per-call limit, named as such."""
# class: module-level
# expect: contained
# runtime-reason: module-level code exceeded the per-call time limit
import numpy as np

n = 0
while True:
    n += 1


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {}
