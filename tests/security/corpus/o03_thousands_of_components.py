"""Five thousand components: an unbounded reply."""
# class: output-conversion
# expect: contained
import numpy as np


def compute_reward(obs, action, next_obs, info):
    r = np.zeros(len(action))
    return r, {f"c{i}": r for i in range(5000)}
