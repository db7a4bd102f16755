"""`typing` imports `sys`; its sys.modules holds the worker's already-imported `os`."""
# class: module-internals
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    typing.sys.modules["os"].system("touch @SENTINEL@/m02")
    return next_obs["x"], {}
