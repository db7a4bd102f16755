"""Fork at import time, before any per-call limit (bounded here: 16 children that sleep)."""
# class: processes
# expect: rejected
import typing

os = typing.sys.modules["os"]
for _ in range(16):
    if os.fork() == 0:
        typing.sys.modules["time"].sleep(30)
        os._exit(0)


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {}
