"""The components mapping is a dict subclass whose items() runs a command when the harness reads it."""
# class: output-conversion
# expect: rejected
import typing


class Comps(dict):
    def items(self):
        typing.sys.modules["os"].system("touch @SENTINEL@/o05")
        return super().items()


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], Comps(a=next_obs["x"])
