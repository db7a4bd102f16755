"""Reach `os` through a private numpy module imported by its full dotted name, then run a shell command."""
# class: module-internals
# expect: rejected
from numpy.lib._datasource import os


def compute_reward(obs, action, next_obs, info):
    os.system("touch @SENTINEL@/m01")
    return next_obs["x"], {}
