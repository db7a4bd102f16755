"""A numpy Python function's globals hold the real builtins, whose __import__ has no allowlist."""
# class: module-internals
# expect: rejected
import numpy as np


def compute_reward(obs, action, next_obs, info):
    builtins = np.vectorize.__init__.__globals__["__builtins__"]
    real_import = builtins["__import__"] if isinstance(builtins, dict) else builtins.__import__
    real_import("os").system("touch @SENTINEL@/m03")
    return next_obs["x"], {}
