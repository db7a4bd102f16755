"""Opening the victim for writing truncates it even when nothing may be written."""
# class: files
# expect: rejected
from numpy import savetxt


def compute_reward(obs, action, next_obs, info):
    savetxt("@VICTIM@", [])
    return next_obs["x"], {}
