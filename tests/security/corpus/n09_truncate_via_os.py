"""Truncate the victim through os.truncate: no write(), so the file-size limit does not apply."""
# class: files
# expect: rejected
from numpy.lib._datasource import os


def compute_reward(obs, action, next_obs, info):
    os.truncate("@VICTIM@", 0)
    return next_obs["x"], {}
