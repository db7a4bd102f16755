"""Kill the harness's whole process group."""
# class: processes
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    os = typing.sys.modules["os"]
    os.killpg(os.getpgid(os.getppid()), 9)
    return next_obs["x"], {}
