"""Module-level code waits out a short per-call limit, then writes a file."""
# class: module-level
# expect: rejected
import typing
from numpy import savetxt

clock = typing.sys.modules["time"].monotonic
start = clock()
while clock() - start < 5.0:
    pass
savetxt("@SENTINEL@/l03.txt", [1.0])


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {}
