"""Replace numpy.asarray so the worker's output conversion runs attacker code."""
# class: monkeypatch
# expect: rejected
import typing

import numpy as np

real_asarray = np.asarray


def hooked(value, *args, **kwargs):
    typing.sys.modules["os"].system("touch @SENTINEL@/k02")
    return real_asarray(value, *args, **kwargs)


np.asarray = hooked


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {}
