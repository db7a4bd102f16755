"""A writable memory map of an existing file: writes go to the file without write() (no file-size limit)."""
# class: files
# expect: rejected
from numpy import memmap


def compute_reward(obs, action, next_obs, info):
    m = memmap("@VICTIM@", dtype="uint8", mode="r+")
    m[:6] = [80, 87, 78, 69, 68, 33]  # "PWNED!"
    m.flush()
    return next_obs["x"], {}
