"""Kill an unrelated process by pid (another job of the same user)."""
# class: processes
# expect: rejected
from numpy.lib._datasource import os


def compute_reward(obs, action, next_obs, info):
    os.kill(@DECOY@, 9)
    return next_obs["x"], {}
