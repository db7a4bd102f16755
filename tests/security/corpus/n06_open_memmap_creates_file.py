"""numpy.lib.format.open_memmap creates and sizes a new file."""
# class: files
# expect: rejected
from numpy.lib.format import open_memmap


def compute_reward(obs, action, next_obs, info):
    m = open_memmap("@SENTINEL@/n06.npy", mode="w+", dtype="float64", shape=(4,))
    m[:] = 1.0
    return next_obs["x"], {}
