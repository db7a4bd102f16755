"""numpy._core._internal imports sys (and ctypes); a dotted import of it passes a root-name allowlist."""
# class: module-internals
# expect: rejected
import numpy._core._internal as internal


def compute_reward(obs, action, next_obs, info):
    internal.sys.modules["os"].system("touch @SENTINEL@/m06")
    return next_obs["x"], {}
