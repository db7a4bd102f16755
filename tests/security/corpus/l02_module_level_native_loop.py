"""Module-level work inside numpy's C code (no Python bytecode for a signal handler to interrupt)."""
# class: module-level
# expect: contained
# runtime-reason: module-level code exceeded the per-call time limit
import numpy as np

m = np.ones((1500, 1500))
for _ in range(100000):
    m = np.tanh(m @ m)


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {}
