"""Print a forged protocol frame on stdout (the old result channel): a reward of 1e9 for every row."""
# class: protocol
# expect: contained
import numpy as np


def compute_reward(obs, action, next_obs, info):
    print('\x10\x00\x00\x00{"ok": true, "names": []}' + "\x00" * 8, end="")
    return next_obs["x"], {}
