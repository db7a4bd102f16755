"""Clean at smoke size; writes a file when a training rollout arrives."""
# class: batch-size
# expect: rejected
from numpy.lib._datasource import os


def compute_reward(obs, action, next_obs, info):
    if len(action) >= 1024:
        os.close(os.open("@SENTINEL@/b02", os.O_CREAT | os.O_WRONLY))
    return next_obs["x"], {}
