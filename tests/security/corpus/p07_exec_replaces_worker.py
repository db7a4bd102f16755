"""Replace the worker process with a shell."""
# class: processes
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    typing.sys.modules["os"].execv("/bin/sh", ["sh", "-c", "touch @SENTINEL@/p07"])
    return next_obs["x"], {}
