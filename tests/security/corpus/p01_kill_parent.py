"""Kill the harness that runs the program."""
# class: processes
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    os = typing.sys.modules["os"]
    os.kill(os.getppid(), 9)
    return next_obs["x"], {}
