"""`from typing import sys`: a module name imported from an allowed module."""
# class: module-internals
# expect: rejected
from typing import sys


def compute_reward(obs, action, next_obs, info):
    sys.modules["os"].system("touch @SENTINEL@/m07")
    return next_obs["x"], {}
