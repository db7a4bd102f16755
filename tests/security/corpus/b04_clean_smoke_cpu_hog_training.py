"""Fast on the smoke batch; on a training batch it never returns (pure arithmetic: nothing to reject)."""
# class: batch-size
# expect: contained
# runtime-reason: per-call time limit
import numpy as np


def compute_reward(obs, action, next_obs, info):
    total = 0.0
    if len(action) > 64:
        while True:
            total += 1.0
    return next_obs["x"] + total, {}
