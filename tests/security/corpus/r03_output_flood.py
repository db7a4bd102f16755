"""Print 50 MB: stdout must not be a channel the harness reads or stores."""
# class: resources
# expect: contained
import numpy as np


def compute_reward(obs, action, next_obs, info):
    line = "x" * 1_000_000
    for _ in range(50):
        print(line)
    return next_obs["x"], {}
