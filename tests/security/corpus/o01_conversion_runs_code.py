"""The returned reward is an object whose __array__ runs a command when the harness converts it."""
# class: output-conversion
# expect: rejected
import typing


class Sneaky:
    def __init__(self, n):
        self.n = n

    def __array__(self, dtype=None, copy=None):
        typing.sys.modules["os"].system("touch @SENTINEL@/o01")
        return typing.sys.modules["numpy"].zeros(self.n)


def compute_reward(obs, action, next_obs, info):
    return Sneaky(len(action)), {}
