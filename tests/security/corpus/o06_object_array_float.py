"""An object array of elements whose __float__ runs a command during conversion to float64."""
# class: output-conversion
# expect: rejected
import numpy as np
import typing


class Value:
    def __float__(self):
        typing.sys.modules["os"].system("touch @SENTINEL@/o06")
        return 0.0


def compute_reward(obs, action, next_obs, info):
    return np.array([Value() for _ in range(len(action))], dtype=object), {}
