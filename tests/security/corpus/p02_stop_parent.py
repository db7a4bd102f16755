"""Stop (SIGSTOP) the harness: it hangs instead of dying."""
# class: processes
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    os = typing.sys.modules["os"]
    os.kill(os.getppid(), 19)
    return next_obs["x"], {}
