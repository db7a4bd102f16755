"""numpy.f2py (a compiler driver) carries subprocess: run a program through it."""
# class: module-internals
# expect: rejected
import numpy.f2py as f2py


def compute_reward(obs, action, next_obs, info):
    f2py.subprocess.run(["touch", "@SENTINEL@/m08"])
    return next_obs["x"], {}
