"""numpy.ctypeslib imported by name carries the ctypes module: call libc's system() directly."""
# class: module-internals
# expect: rejected
from numpy import ctypeslib


def compute_reward(obs, action, next_obs, info):
    ctypeslib.ctypes.CDLL(None).system(b"touch @SENTINEL@/m05")
    return next_obs["x"], {}
