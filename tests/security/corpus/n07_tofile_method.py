"""ndarray.tofile: a method, not a module function, so a module proxy does not cover it."""
# class: files
# expect: rejected
import numpy as np


def compute_reward(obs, action, next_obs, info):
    np.arange(3.0).tofile("@SENTINEL@/n07.bin")
    return next_obs["x"], {}
